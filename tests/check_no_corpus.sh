#!/bin/sh
# check_no_corpus.sh: a missing reference corpus is a loud SKIP, never a
# crash.  Runs every C unit test (tests/unit/DIR/test_*.c) with
# TILEDBFS_CORPUS naming a folder that does not exist: each must exit 0 (it
# needs no corpus) or 77 (automake's SKIP) with its "SKIP corpus:" line,
# never fail or die of a signal; one with corpus tests (RUN_CORPUS in its
# source) must skip.  The tests' own lines are shown indented, so that their "SKIP
# corpus:" lines do not look like this check's.  A program may also exit 77
# for a reason that is not the corpus (a vector path this CPU lacks): then
# each skip is a "SKIP NAME: why" line of its own, shown here, and no
# corpus test may be among them.  With program names (DIR/test_x ...) as
# arguments, only those are run.  Exit 1 on any breach.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-$srcdir}
out=$(mktemp "${TMPDIR:-/tmp}/tiledbfs-nocorpus.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT
# where no corpus is: a name under a file, which cannot be a folder
nowhere=$out/no-corpus-here

bad=0
n=0
if [ $# -eq 0 ]; then
    set -- "$srcdir"/tests/unit/*/test_*.c
fi
for arg in "$@"; do
    # DIR/test_x, from a source's path or as given
    t=${arg%.c}
    t=${t#"$srcdir"/tests/unit/}
    src=$srcdir/tests/unit/$t.c
    prog=$builddir/tests/unit/$t
    n=$((n + 1))
    if [ ! -x "$prog" ]; then
        echo "FAIL: $t: $prog is not built"
        bad=1
        continue
    fi
    # (the console descriptor of make check is not passed on)
    st=0
    env -u TILEDBFS_TEST_CONSOLE TILEDBFS_CORPUS="$nowhere" \
        timeout -k 10 300 "$prog" >"$out" 2>&1 || st=$?
    said=no
    grep -q "^SKIP corpus: $t: no reference corpus at $nowhere " "$out" && said=yes
    # skips for other reasons: "SKIP test_fn: why" (unit.h's UNIT_SKIP),
    # those of RUN_CORPUS ("SKIP test_fn: no reference corpus") aside
    other=$(grep '^SKIP [A-Za-z_][A-Za-z0-9_]*: ' "$out" |
            grep -v -e '^SKIP corpus: ' -e '^SKIP [A-Za-z0-9_]*: no reference corpus$')
    why=""
    case $st in
    0) [ "$said" = no ] || why="said SKIP corpus but exited 0, not 77"
       [ -z "$other" ] || why="said SKIP but exited 0, not 77" ;;
    77) [ "$said" = yes ] || [ -n "$other" ] ||
            why="exited 77 without its SKIP corpus line, nor a SKIP line of another reason" ;;
    124 | 137) why="did not finish within 300 s" ;;
    *) if [ "$st" -gt 128 ]; then
           why="killed by signal $((st - 128))"
       else
           why="exited $st"
       fi ;;
    esac
    if [ -z "$why" ] && [ "$st" -ne 77 ] && grep -q 'RUN_CORPUS(' "$src"; then
        why="exited $st: its corpus tests must make it skip"
    fi
    if [ -n "$why" ]; then
        echo "FAIL: $t without a corpus: $why; its output:"
        sed 's/^/    | /' "$out"
        bad=1
    elif [ "$st" -eq 77 ] && [ "$said" = no ]; then
        echo "ok $t: needs no corpus; skips for another reason, loudly (exit 77):"
        echo "$other" | sed 's/^/    | /'
    elif [ "$st" -eq 77 ]; then
        echo "ok $t: skips its corpus tests, loudly (exit 77)"
        [ -z "$other" ] || echo "$other" | sed 's/^/    | /'
    else
        echo "ok $t: needs no corpus (exit 0)"
    fi
done
if [ "$n" -eq 0 ]; then
    echo "FAIL: no tests/unit/*/test_*.c under $srcdir"
    exit 1
fi
echo "$n unit test programs run with TILEDBFS_CORPUS=$nowhere"
exit $bad
