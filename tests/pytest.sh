#!/bin/sh
# pytest.sh: make check's entry for the Python suite in tests/py (the mount contract, end to end).
# make check sets top_srcdir and top_builddir (see AM_TESTS_ENVIRONMENT in
# Makefile.am); run by hand it works from the repository root.  The summary
# line (and a "SKIP corpus:" line when tests found no corpus) also goes to
# descriptor $TILEDBFS_TEST_CONSOLE when set: make check's console.
# Exit: pytest's, except that "no tests collected" (5) is a failure too.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-$srcdir}
python=/usr/bin/python3

cd "$srcdir" || exit 1
out=$(mktemp "${TMPDIR:-/tmp}/tiledbfs-pytest.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

TILEDBFS_BUILD=$builddir PYTHONDONTWRITEBYTECODE=1 \
    "$python" -m pytest -q -rs --durations=25 -p no:cacheprovider tests/py >"$out" 2>&1
rc=$?
cat "$out"
summary=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error|errors|deselected)|no tests ran' "$out" | tail -n 1)
report="pytest summary: ${summary:-(none)}"
# tests skipped for want of the corpus (conftest.py's NO_CORPUS reason)
nocorpus=$(grep -c 'corpus not found at' "$out")
if [ "$nocorpus" -gt 0 ]; then
    where=$(grep -o 'corpus not found at [^ ]*' "$out" | head -n 1)
    report="$report
SKIP corpus: tests/pytest.sh: $where: its corpus tests were skipped (the list: pytest's short summary); set TILEDBFS_CORPUS=DIR"
fi
echo "$report"
# make check names a descriptor that reaches the console (Makefile.am)
if [ -n "${TILEDBFS_TEST_CONSOLE:-}" ]; then
    case $TILEDBFS_TEST_CONSOLE in
    *[!0-9]*) ;;
    *) eval 'echo "$report" 2>/dev/null >&'"$TILEDBFS_TEST_CONSOLE" ;;
    esac
fi
if [ "$rc" -eq 5 ]; then
    echo "pytest.sh: no tests collected" >&2
    exit 1
fi
exit "$rc"
