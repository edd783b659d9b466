#!/bin/sh
# pytest.sh: make check's entry for the Python suite in tests/py (the mount contract, end to end).
# make check sets top_srcdir and top_builddir (see TESTS_ENVIRONMENT in
# Makefile.am); run by hand it works from the repository root.
# Exit: pytest's, except that "no tests collected" (5) is a failure too.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-$srcdir}
python=/usr/bin/python3

cd "$srcdir" || exit 1
out=$(mktemp "${TMPDIR:-/tmp}/tiledbfs-pytest.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

TILEDBFS_BUILD=$builddir PYTHONDONTWRITEBYTECODE=1 \
    "$python" -m pytest -q -rs -p no:cacheprovider tests/py >"$out" 2>&1
rc=$?
cat "$out"
summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error|errors|deselected)|no tests ran' "$out" | tail -n 1)
echo "pytest summary: ${summary:-(none)}"
if [ "$rc" -eq 5 ]; then
    echo "pytest.sh: no tests collected" >&2
    exit 1
fi
exit "$rc"
