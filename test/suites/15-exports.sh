# The shipped libraries export only what they must: libuct_gaudi.so the
# public API of src/uct/gaudi/api/uct_gaudi.h (UCX looks no symbol of the
# module up), libucx_perftest_gaudi.so nothing (constructors register).
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
header=$top/src/uct/gaudi/api/uct_gaudi.h

exports() {
    nm -D --defined-only "$1" | awk '$2 ~ /^[A-Z]$/ { print $3 }' | sort
}

# functions declared in the public header (declarations start at column 0)
api=$(sed -n 's/^[a-z].*[ *]\(uct_gaudi_[a-z0-9_]*\)(.*$/\1/p' "$header" |
      sort -u)
if [ "$(echo "$api" | wc -w)" -ge 5 ]; then
    pass "public API parsed ($(echo $api))"
else
    fail "public API parsed" "only '$api' in $header"
fi

got=$(exports "$GAUDI_UCX_LIBDIR/libuct_gaudi.so")
extra=$(comm -23 <(echo "$got") <(echo "$api"))
missing=$(comm -13 <(echo "$got") <(echo "$api"))
[ -z "$extra" ] && pass "libuct_gaudi.so exports no internal symbol" ||
    fail "libuct_gaudi.so exports no internal symbol" \
         "$(echo "$extra" | wc -l) extra: $(echo $extra | cut -c1-300)"
[ -z "$missing" ] && pass "libuct_gaudi.so exports the whole public API" ||
    fail "libuct_gaudi.so exports the whole public API" \
         "missing: $(echo $missing)"

got=$(exports "$GAUDI_UCX_LIBDIR/libucx_perftest_gaudi.so")
[ -z "$got" ] && pass "libucx_perftest_gaudi.so exports nothing" ||
    fail "libucx_perftest_gaudi.so exports nothing" "exports: $(echo $got)"

finish
