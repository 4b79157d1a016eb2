# The source tree keeps its layers (docs/base.md, "Layers"): a folder of
# src/uct/gaudi includes only from its own layer or the layers below it,
# copy/ and ipc/ never from each other, and no folder grows past a size a
# reader can take in at once; the gtest sources mirror those folders
# (test/gtest/<layer>, README.md "Layout").
. "$(dirname "$0")/lib.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
src=$top/src/uct/gaudi

# bottom to top; one line per rank, folders on one line share it
layers="api compat
hl
syn
dev
dma
mem
base
copy ipc"
max_files=12

rank_of() {
    echo "$layers" | awk -v d="$1" '{ for (i = 1; i <= NF; i++)
                                          if ($i == d) print NR }'
}

for dir in $(echo "$layers" | tr ' ' '\n'); do
    own=$(rank_of "$dir")
    if [ ! -d "$src/$dir" ]; then
        fail "layer $dir exists" "no folder $src/$dir"
        continue
    fi
    nfiles=$(find "$src/$dir" -maxdepth 1 -name '*.[ch]' | wc -l)
    if [ "$nfiles" -le "$max_files" ]; then
        pass "$dir/: $nfiles files (at most $max_files)"
    else
        fail "$dir/: at most $max_files files" "$nfiles files"
    fi
    bad=
    while read -r file used; do
        [ -n "$used" ] || continue
        r=$(rank_of "$used")
        if [ -z "$r" ]; then
            bad="$bad $file: unknown layer $used;"
        elif [ "$used" != "$dir" ] && [ "$r" -ge "$own" ]; then
            bad="$bad $file includes $used/;"
        fi
    done < <(grep -o '#include <uct/gaudi/[a-z]*/' "$src/$dir"/*.[ch] |
             sed 's#^\([^:]*\):\#include <uct/gaudi/\([a-z]*\)/#\1 \2#')
    if [ -z "$bad" ]; then
        pass "$dir/ includes no layer above or beside it"
    else
        fail "$dir/ includes no layer above or beside it" "$bad"
    fi
done

# UCT's internals (uct/base/) belong to the layers that implement UCT
# objects: base/ and above. Below it a layer sees UCX only through UCS and
# UCT's public API; the one exception is compat's registration cache,
# whose configuration is UCT's own on UCX 1.12/1.13 (ucs_rcache_config_t
# came later), included only where configure found no UCS one.
base_rank=$(rank_of base)
bad=
for dir in $(echo "$layers" | tr ' ' '\n'); do
    [ "$(rank_of "$dir")" -lt "$base_rank" ] || continue
    [ -d "$src/$dir" ] || continue
    while IFS=: read -r file line _; do
        case $file:$(sed -n "$((line - 1))p" "$file") in
        */compat/gaudi_compat.h:'/* the registration cache'*) continue ;;
        esac
        bad="$bad ${file#$src/}:$line;"
    done < <(grep -n '#[[:space:]]*include <uct/base/' "$src/$dir"/*.[ch])
done
if [ -z "$bad" ]; then
    pass "no layer below base/ includes UCT's internals (uct/base/)"
else
    fail "no layer below base/ includes UCT's internals (uct/base/)" "$bad"
fi

# no source file longer than a reader can hold in mind (issue 33: split
# by role instead)
max_lines=1000
long=$(find "$top/src" -name '*.[ch]' -exec wc -l {} + |
       awk -v m=$max_lines '$2 != "total" && $1 > m { print $2 ": " $1 }')
if [ -z "$long" ]; then
    pass "no file in src/ over $max_lines lines"
else
    fail "no file in src/ over $max_lines lines" "$(echo $long)"
fi

# every source folder is in the layer list
for d in "$src"/*/; do
    d=$(basename "$d")
    [ -n "$(rank_of "$d")" ] ||
        fail "folder $d/ has a layer" "not in the list of this suite"
done

# every folder of test/gtest but common/ (shared) and ucx/ (UCX's own
# suites) is named after a layer, and holds tests
for d in "$top"/test/gtest/*/; do
    d=$(basename "$d")
    case $d in common|ucx) continue ;; esac
    if [ -z "$(rank_of "$d")" ]; then
        fail "test/gtest/$d/ mirrors a layer" "no folder $src/$d"
    elif ! ls "$top/test/gtest/$d"/*.cc >/dev/null 2>&1; then
        fail "test/gtest/$d/ mirrors a layer" "it holds no test source"
    else
        pass "test/gtest/$d/ mirrors src/uct/gaudi/$d/"
    fi
done

# every layer above compat has its test folder; base/ has none yet (its
# public API and iface base are tested through copy/: gaudi_md_test's
# public_api, gaudi_cpy_test), and is named here until it has
untested="base"
for dir in $(echo "$layers" | tail -n +2 | tr ' ' '\n'); do
    case " $untested " in
    *" $dir "*)
        [ -d "$top/test/gtest/$dir" ] &&
            fail "untested list is current" "test/gtest/$dir exists: drop $dir from it"
        continue ;;
    esac
    if [ -d "$top/test/gtest/$dir" ]; then
        pass "layer $dir/ has test/gtest/$dir/"
    else
        fail "layer $dir/ has test/gtest/$dir/" "no such folder"
    fi
done

finish
