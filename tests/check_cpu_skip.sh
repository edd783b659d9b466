#!/bin/sh
# check_cpu_skip.sh: a vector path this CPU lacks is a loud skip of that
# path, never a failure, in make check and in check_no_corpus.sh.  Runs
# filters/test_shuffle_simd as on a CPU with neither SSE2 nor AVX2
# (TILEDBFS_TEST_NO_SIMD): it must run the scalar path, name each skipped
# path on a SKIP line and exit 77; check_no_corpus.sh must take that as a
# skip of another reason than the corpus.  Exit 1 on any breach.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-$srcdir}
out=$(mktemp "${TMPDIR:-/tmp}/tiledbfs-cpuskip.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
bad=0
fail() {
    echo "FAIL: $*; the output:"
    sed 's/^/    | /' "$out"
    bad=1
}

st=0
env -u TILEDBFS_TEST_CONSOLE TILEDBFS_TEST_NO_SIMD=sse2,avx2 \
    "$builddir/tests/unit/filters/test_shuffle_simd" >"$out" 2>&1 || st=$?
[ "$st" -eq 77 ] || fail "filters/test_shuffle_simd without SSE2 and AVX2 exited $st, not 77"
for line in '^ok test_path_scalar$' \
            '^SKIP test_path_sse2: this CPU (or build) has no such vector path$' \
            '^SKIP test_path_avx2: this CPU (or build) has no such vector path$' \
            '^[0-9]* passed, 0 failed, 2 skipped$'; do
    grep -q "$line" "$out" || fail "filters/test_shuffle_simd printed no line $line"
done
[ "$bad" -eq 0 ] && echo "ok filters/test_shuffle_simd without SSE2 and AVX2: the scalar path runs, the others are named as skipped"

st=0
TILEDBFS_TEST_NO_SIMD=avx2 sh "$srcdir/tests/check_no_corpus.sh" filters/test_shuffle_simd \
    >"$out" 2>&1 || st=$?
if [ "$st" -ne 0 ]; then
    fail "check_no_corpus.sh took a CPU path's skip for a failure (exit $st)"
elif ! grep -q '^ok filters/test_shuffle_simd: needs no corpus; skips for another reason' "$out" ||
     ! grep -q '^    | SKIP test_path_avx2: ' "$out"; then
    fail "check_no_corpus.sh did not show the CPU path's skip"
else
    echo "ok check_no_corpus.sh: a CPU without AVX2 is a skip of that path, shown:"
    sed 's/^/    /' "$out"
fi
exit $bad
