# The docs cannot drift from the tree (contrib/check-docs.py): every path,
# file, function, suite and variable that README.md and docs/ name exists,
# every UCX_GAUDI_* variable the module defines has one table row, and
# every table of figures in docs/performance.md names its commit and
# command. Then the check is tested on itself: a copy of the docs with one
# stale name of each kind must fail, naming each.
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d); tmpdirs+=("$work")
check="python3 $top/contrib/check-docs.py --top $top"

# the variables UCX knows with the module loaded
if ! "$GAUDI_UCX_RUN" ucx_info -c > "$work/ucx-vars" 2>"$work/ucx-info.err" ||
   ! grep -q '^UCX_GAUDI_DEVICE=' "$work/ucx-vars"; then
    fail "ucx_info -c lists the UCX_GAUDI_* variables" \
         "$(tail -3 "$work/ucx-info.err")"
fi

$check --ucx-vars "$work/ucx-vars" > "$work/out" 2>&1
rc=$?
grep '^STALE ' "$work/out"
if [ "$rc" -eq 0 ]; then
    pass "README.md and docs/ name only what exists ($(tail -1 "$work/out"))"
else
    fail "README.md and docs/ name only what exists" "$(tail -1 "$work/out")"
fi

# the check on itself: one stale name of each kind
mkdir -p "$work/copy"
cp -r "$top/README.md" "$top/docs" "$work/copy/"
cat >> "$work/copy/docs/base.md" <<'DOC'

Stale names: `src/uct/gaudi/dma/gaudi_dma_gone.c`, `mem/gaudi_gone.c`,
`uct_gaudi_no_such_function()`, suite 99-nothing, `UCX_GAUDI_NO_SUCH`,
`HLSIM_NO_SUCH`.

| `UCX_GAUDI_DEVICE` | `auto` | a second row for one variable |
DOC
cat >> "$work/copy/docs/performance.md" <<'DOC'

### A figure without its origin

| size | GB/s |
|---|---|
| 64 KiB | 3.2 GB/s |
DOC
$check --ucx-vars "$work/ucx-vars" --docs "$work/copy" > "$work/out2" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
    pass "the check fails on stale names"
else
    fail "the check fails on stale names" "exit 0"
fi
for what in 'src/uct/gaudi/dma/gaudi_dma_gone.c does not exist' \
            'src/uct/gaudi/mem/gaudi_gone.c does not exist' \
            'uct_gaudi_no_such_function is not in the sources' \
            'suite 99-nothing: no test/suites/99-nothing.sh' \
            'UCX_GAUDI_NO_SUCH is read by no code' \
            'HLSIM_NO_SUCH is read by no code' \
            'UCX_GAUDI_DEVICE has 2 table rows' \
            'a table of figures without the commit'; do
    expect_match "the check names: $what" "$work/out2" "$what"
done
finish
