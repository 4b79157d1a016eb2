#!/bin/sh
#
# Copyright (C) ucx-gaudi contributors. See COPYING for license.
#
# Writes, from a UCX release's test/gtest/common/mem_buffer.cc (argument),
# that file with a Gaudi path (gaudi_mem_buffer.h) in front of UCX's own in
# each function that allocates, frees, fills or copies a buffer, and Gaudi
# among the supported memory types. Fails, naming it, when a place to
# insert is not found once, so that a release whose allocator changed
# breaks the build instead of silently testing host buffers.
#
# Usage: gaudi_mem_buffer.sh <ucx-src>/test/gtest/common/mem_buffer.cc
#
set -e
src=${1:?usage: gaudi_mem_buffer.sh mem_buffer.cc}

awk '
function hook(name, code) {
    print code
    done[name]++
}
/^#include "mem_buffer.h"/ {
    print
    hook("include", "#include \"gaudi_mem_buffer.h\"")
    next
}
/^[^ ].*mem_buffer::supported_mem_types\(/ { fn = "types" }
/^[^ ].*mem_buffer::allocate\(/             { fn = "allocate" }
/^[^ ].*mem_buffer::release\(/              { fn = "release" }
/^[^ ].*mem_buffer::memset\(void/           { fn = "memset" }
/^[^ ].*mem_buffer::copy_between\(/         { fn = "copy" }
/^}/ { fn = "" }
fn == "types" && /vec\.push_back\(UCS_MEMORY_TYPE_HOST\);/ {
    print
    hook(fn, "        if (ucx_gaudi_test_mem_supported()) {\n" \
             "            vec.push_back(ucx_gaudi_test_mem_type());\n" \
             "        }")
    next
}
fn == "allocate" && /^ *switch \(mem_type\) \{/ && !done[fn] {
    hook(fn, "    if (ucx_gaudi_test_is_gaudi(mem_type)) {\n" \
             "        return ucx_gaudi_test_alloc(size);\n" \
             "    }")
}
fn == "release" && /^ *switch \(mem_type\) \{/ && !done[fn] {
    hook(fn, "        if (ucx_gaudi_test_is_gaudi(mem_type)) {\n" \
             "            ucx_gaudi_test_free(ptr);\n" \
             "            return;\n" \
             "        }")
}
fn == "memset" && /^ *switch \(mem_type\) \{/ && !done[fn] {
    hook(fn, "    if (ucx_gaudi_test_is_gaudi(mem_type)) {\n" \
             "        ucx_gaudi_test_memset(buffer, c, length);\n" \
             "        return;\n" \
             "    }")
}
fn == "copy" && /^ *if \(check_mem_types\(dst_mem_type, src_mem_type, host_mem_types\)\)/ && !done[fn] {
    hook(fn, "    if (ucx_gaudi_test_copy(dst, src, length, dst_mem_type,\n" \
             "                            src_mem_type)) {\n" \
             "        return;\n" \
             "    }")
}
{ print }
END {
    n = split("include types allocate release memset copy", names, " ")
    for (i = 1; i <= n; i++) {
        if (done[names[i]] != 1) {
            printf("gaudi_mem_buffer.sh: %s: no single place for the Gaudi " \
                   "path in %s\n", FILENAME, names[i]) > "/dev/stderr"
            failed = 1
        }
    }
    exit failed
}' "$src"
