#!/bin/sh
# check_includes.sh: the layers of the code, as the include and call graph
# between files shows them.
#  1. The front ends (mount/, tools/, fuse/) reach the format engine only
#     through its two public headers, tiledb_format.h (reading) and
#     tiledb_format_write.h (writing).
#  2. Inside format/, each folder includes headers of its own folder and of
#     the folders below it only.  Bottom up: core; then filters and the
#     protocols of object stores (s3, azure) side by side; then model and
#     objstore (the object-store backend running the protocols) side by
#     side; then read and write side by side (neither includes the
#     other), then tree and consolidate side by side (the reader feeding
#     the writer).
#  3. With the engine built (its objects in $top_builddir), the same order
#     holds for calls (nm: the object that uses a symbol and the one that
#     defines it), and no two files of format/ need each other, directly or
#     through others (no circle in the graph of includes and calls).
#  4. With mount/ and fuse/ built, no two files of either folder call each
#     other, directly or through others (their order, bottom up, is written
#     at the top of mount/priv.h and fuse/tiledbfs.h).
#  5. One place per job: filter types, datatypes' values, the plan of a
#     sparse merge and FUSE's replies each in one module (section 5).
# Prints each offending line; exit 1 if any.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
builddir=${top_builddir:-$srcdir}
cd "$srcdir" || exit 1
status=0

bad=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\(core\|filters\|s3\|azure\|objstore\|model\|read\|write\|tree\|consolidate\)/' \
    mount/*.[ch] tools/*.[ch] fuse/*.[ch])
if [ -n "$bad" ]; then
    echo "internal engine headers included by a front end:"
    echo "$bad"
    status=1
fi
n=$(cat mount/*.[ch] tools/*.[ch] fuse/*.[ch] | grep -c '#include "tiledb_format')
echo "front ends include only the public headers ($n includes)"
[ "$n" -gt 0 ] || status=1

# The rank of an engine folder (equal ranks: side by side).
rank() {
    case $1 in
    core) echo 0 ;;
    filters | s3 | azure) echo 1 ;;
    model | objstore) echo 2 ;;
    read | write) echo 3 ;;
    tree | consolidate) echo 4 ;;
    *) echo -1 ;;
    esac
}

for d in format/*/; do
    d=${d%/}
    d=${d#format/}
    if [ "$(rank "$d")" -lt 0 ]; then
        echo "format/$d/: a folder tests/check_includes.sh does not rank"
        status=1
    fi
done

nbad=0
ninc=0
lines=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/' \
    format/*/*.[ch])
while IFS= read -r line; do
    [ -n "$line" ] || continue
    file=${line%%:*}
    from=${file#format/}
    from=${from%%/*}
    to=$(echo "$line" | sed 's/^[^"]*"\([a-z_]*\)\/.*/\1/')
    ninc=$((ninc + 1))
    [ "$to" = "$from" ] && continue
    rf=$(rank "$from")
    rt=$(rank "$to")
    if [ "$rt" -lt 0 ] || [ "$rt" -ge "$rf" ]; then
        echo "format/$from/ includes a header of $to/ (not below it): $line"
        nbad=$((nbad + 1))
    fi
done <<EOF
$lines
EOF
echo "format/: $ninc includes of a folder's header, $nbad against the folder order"
[ "$nbad" -eq 0 ] || status=1

# The circles of a graph, for the awk programs below: dfs(v) walks from v
# along out[v] (targets separated by spaces); an edge back to a file on
# the path closes a circle, printed and counted in ncirc.
circles_awk='
function dfs(v,   m, ws, i, w) {
    color[v] = 1; path[++depth] = v
    m = split(out[v], ws, " ")
    for (i = 1; i <= m; i++) {
        w = ws[i]
        if (!(w in color)) dfs(w)
        else if (color[w] == 1) { circle(w); ncirc++ }
    }
    color[v] = 2; depth--
}
function circle(w,   i, s) {
    for (i = depth; i > 0 && path[i] != w; i--) ;
    s = ""
    for (; i <= depth; i++) s = s path[i] " -> "
    print "circle: " s w
}
'

# 3: the graph of calls (nm) and includes between the engine's files.
objs=$(ls "$builddir"/format/*/*.o 2>/dev/null)
if [ -z "$objs" ]; then
    echo "SKIP calls between format/'s files: no objects under $builddir/format" >&2
    exit $status
fi
if ! command -v nm >/dev/null 2>&1; then
    echo "SKIP calls between format/'s files: no nm" >&2
    exit $status
fi
for o in $objs; do
    nm "$o" | sed "s|^|$o |"
done | awk -v src="$srcdir" -v build="$builddir" '
function folder(f,   p) { split(f, p, "/"); return p[2] }
function rank(d) {
    if (d == "core") return 0
    if (d == "filters" || d == "s3" || d == "azure") return 1
    if (d == "model" || d == "objstore") return 2
    if (d == "read" || d == "write") return 3
    if (d == "tree" || d == "consolidate") return 4; return -1
}
# format/x/libtdbformat_a-name.o -> format/x/name.c
function source(o,   s) {
    s = substr(o, length(build) + 2)
    sub(/[a-z_]*_a-/, "", s)
    sub(/\.o$/, ".c", s)
    return s
}
NF == 4 && $3 ~ /^[TDBR]$/ { def[$4] = source($1); next }
NF == 3 && $2 == "U" { use[source($1), $3] = 1; next }
END {
    for (k in use) {
        split(k, p, SUBSEP)
        t = def[p[2]]
        if (t == "" || t == p[1]) continue
        edge[p[1], t] = 1
    }
    # includes: file -> header (resolved from format/ or the file folder)
    cmd = "cd " src " && grep -H \"^[[:space:]]*#[[:space:]]*include[[:space:]]*\\\"\" format/*/*.[ch]"
    while ((cmd | getline l) > 0) {
        f = substr(l, 1, index(l, ":") - 1)
        h = l; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
        d = f; sub(/\/[^\/]*$/, "", d)
        if (system("test -f " src "/format/" h) == 0) h = "format/" h
        else if (system("test -f " src "/" d "/" h) == 0) h = d "/" h
        else continue
        if (h != f) edge[f, h] = 1
    }
    close(cmd)
    nup = 0
    for (k in edge) {
        split(k, p, SUBSEP)
        node[p[1]] = 1; node[p[2]] = 1
        out[p[1]] = out[p[1]] " " p[2]
        a = folder(p[1]); b = folder(p[2])
        if (a != b && rank(b) >= rank(a)) {
            print "format/" a "/ uses " b "/ (not below it): " p[1] " -> " p[2]
            nup++
        }
    }
    # circles: a depth-first search finds an edge back to a file on the
    # path; each such edge closes a circle
    ncirc = 0
    for (v in node) if (!(v in color)) dfs(v)
    n = 0; for (v in node) n++
    printf "format/: %d files, %d calls and includes against the folder order, %d circles\n", n, nup, ncirc
    exit (nup || ncirc) ? 1 : 0
}
'"$circles_awk" || status=1

# 4: calls between the files of mount/ and of fuse/ (nm), without circles.
for dir in mount fuse; do
    objs=$(ls "$builddir"/$dir/*.o 2>/dev/null)
    if [ -z "$objs" ]; then
        echo "SKIP calls between $dir/'s files: no objects under $builddir/$dir" >&2
        continue
    fi
    for o in $objs; do
        nm "$o" | sed "s|^|$o |"
    done | awk -v dir="$dir" '
# mount/commit.o, fuse/tiledbfs-ll.o -> commit, ll
function name(o,   s) {
    s = o; sub(/.*\//, "", s); sub(/^tiledbfs-/, "", s); sub(/\.o$/, "", s)
    return dir "/" s ".c"
}
NF == 4 && $3 ~ /^[TDBR]$/ { def[$4] = name($1); next }
NF == 3 && $2 == "U" { use[name($1), $3] = 1; next }
END {
    for (k in use) {
        split(k, p, SUBSEP)
        t = def[p[2]]
        if (t == "" || t == p[1]) continue
        if (!((p[1], t) in edge)) out[p[1]] = out[p[1]] " " t
        edge[p[1], t] = 1
        node[p[1]] = 1; node[t] = 1
    }
    ncirc = 0
    for (v in node) if (!(v in color)) dfs(v)
    n = 0; for (v in node) n++
    printf "%s/: %d files calling each other, %d circles\n", dir, n, ncirc
    exit ncirc ? 1 : 0
}
'"$circles_awk" || status=1
done
# 5. One place per job (issue 32): each job below is done in one module,
#    and a word of it found anywhere else is a second place.
#    - filter types are told apart only in format/filters/ (each filter's
#      options in its own file, walked by filters/options.c);
#    - datatypes' values are loaded and compared by class only in
#      format/core/ (core/value.c): no switch elsewhere names a float or
#      time datatype;
#    - the plan of a sparse merge is encoded only in format/read/plan.[ch];
#    - FUSE's replies are made only in fuse/ll.c, from the read's sink.
one_place() { # WHAT PATTERN ALLOWED-REGEX FILES...
    what=$1 pat=$2 allowed=$3
    shift 3
    hits=$(grep -n -E "$pat" "$@" /dev/null | grep -v -E "^($allowed):" || true)
    if [ -n "$hits" ]; then
        echo "$what outside its module:"
        echo "$hits"
        status=1
    fi
}
engine=$(ls format/*/*.[ch] format/*.h)
one_place "filter types told apart" 'case TDB_FILTER_' 'format/filters/[^:]*' $engine
one_place "datatypes switched on" 'case TDB_(FLOAT|DATETIME|TIME)_?[A-Z0-9]*:' \
    'format/core/[^:]*' $engine mount/*.[ch] tools/*.c
one_place "the plan encoding" 'TDB_PLAN_[A-Z]' 'format/read/plan\.[ch]' $engine
one_place "FUSE replies" 'fuse_reply_' 'fuse/ll\.c' fuse/*.[ch] mount/*.[ch] tools/*.c
echo "one place per job: filter types, datatypes, the plan encoding, FUSE replies"
exit $status
