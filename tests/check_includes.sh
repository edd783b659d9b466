#!/bin/sh
# check_includes.sh: the front ends (mount/, tools/, fuse/) reach the format
# engine only through its two public headers, tiledb_format.h (reading) and
# tiledb_format_write.h (writing); the engine's folders (core/, filters/,
# read/, write/) are its own.  Prints each offending line; exit 1 if any.
set -u
srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$srcdir" || exit 1
bad=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*\(core\|filters\|read\|write\)/' \
    mount/*.[ch] tools/*.[ch] fuse/*.[ch])
if [ -n "$bad" ]; then
    echo "internal engine headers included by a front end:"
    echo "$bad"
    exit 1
fi
n=$(cat mount/*.[ch] tools/*.[ch] fuse/*.[ch] | grep -c '#include "tiledb_format')
echo "front ends include only the public headers ($n includes)"
[ "$n" -gt 0 ]
