#
# UCX detection: the installed binaries (pkg-config, ucx_info) and the
# matching source tree, whose internal headers the module is built against.
#
# --with-ucx=DIR selects a UCX installed under the prefix DIR (a source
# build: DIR/bin/ucx_info, DIR/lib/pkgconfig/ucx.pc); without it, the
# system's UCX (Debian/Ubuntu libucx-dev, ucx-utils) is used.
#
AC_DEFUN([UCX_GAUDI_CHECK_UCX], [
    AC_ARG_WITH([ucx],
        [AS_HELP_STRING([--with-ucx=DIR],
            [UCX installed under the prefix DIR (default: the system's)])],
        [], [with_ucx=no])
    UCX_PREFIX=
    AS_IF([test "x$with_ucx" != xno -a "x$with_ucx" != xyes],
          [UCX_PREFIX=`cd "$with_ucx" 2>/dev/null && pwd`
           AS_IF([test ! -x "$UCX_PREFIX/bin/ucx_info" -o \
                       ! -f "$UCX_PREFIX/lib/pkgconfig/ucx.pc"],
                 [AC_MSG_ERROR([--with-ucx=$with_ucx: no bin/ucx_info and lib/pkgconfig/ucx.pc there])])
           PKG_CONFIG_PATH="$UCX_PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
           export PKG_CONFIG_PATH
           UCX_INFO="$UCX_PREFIX/bin/ucx_info"])

    PKG_CHECK_MODULES([UCX], [ucx >= 1.12], [],
        [AC_MSG_ERROR([UCX >= 1.12 not found: apt-get install libucx-dev ucx-utils, or --with-ucx=DIR])])
    UCX_VERSION=`$PKG_CONFIG --modversion ucx`
    # the module calls into libucm (memory events); older ucx.pc omit it
    AS_CASE([" $UCX_LIBS "], [*" -lucm "*], [], [UCX_LIBS="$UCX_LIBS -lucm"])
    # a UCX outside the linker's search path: the module, the perftest
    # allocator and the tests find that UCX's libraries at run time
    AS_IF([test -n "$UCX_PREFIX"],
          [UCX_LIBS="$UCX_LIBS -Wl,-rpath,$UCX_PREFIX/lib"])

    AC_PATH_PROG([UCX_INFO], [ucx_info], [no])
    AS_IF([test "x$UCX_INFO" = xno],
          [AC_MSG_ERROR([ucx_info not found: apt-get install ucx-utils])])
    AC_MSG_CHECKING([version of the installed UCX binaries])
    ucx_bin_version=`$UCX_INFO -v | sed -n -e 's/^# Version \(.*\)$/\1/p' -e 's/^# Library version: \(.*\)$/\1/p' -e 's/^# UCT version=//p' | cut -d' ' -f1`
    AC_MSG_RESULT([$ucx_bin_version])
    # (UCX 1.12's ucx.pc has major.minor only)
    AS_CASE([$ucx_bin_version],
            ["$UCX_VERSION"|"$UCX_VERSION".*], [UCX_VERSION=$ucx_bin_version],
            [AC_MSG_ERROR([ucx_info reports '$ucx_bin_version' but pkg-config reports $UCX_VERSION])])

    AC_ARG_WITH([ucx-src],
        [AS_HELP_STRING([--with-ucx-src=DIR],
            [UCX source tree of exactly the installed UCX version
             (contrib/ucx-src.sh fetches it)])],
        [], [with_ucx_src=no])
    AS_IF([test "x$with_ucx_src" = xno -o "x$with_ucx_src" = xyes],
          [AC_MSG_ERROR([--with-ucx-src=DIR is required: UCX's internal headers are not installed. Run contrib/ucx-src.sh to fetch the matching source.])])
    UCX_SRC_DIR=`cd "$with_ucx_src" 2>/dev/null && pwd`
    AS_IF([test ! -f "$UCX_SRC_DIR/src/uct/base/uct_md.h"],
          [AC_MSG_ERROR([$with_ucx_src is not a UCX source tree (src/uct/base/uct_md.h missing)])])

    AC_MSG_CHECKING([version of the UCX source tree])
    ucx_src_version=`$SHELL "$srcdir/config/ucx-src-version.sh" "$UCX_SRC_DIR"`
    AC_MSG_RESULT([$ucx_src_version])
    AS_IF([test "x$ucx_src_version" != "x$ucx_bin_version"],
          [AC_MSG_ERROR([UCX source tree version $ucx_src_version differs from the installed UCX $ucx_bin_version; internal structures would not match. Use the source of exactly $ucx_bin_version (contrib/ucx-src.sh).])])

    # config.h of the stock build, as printed by the installed ucx_info
    mkdir -p ucx_config
    { echo '#ifndef UCX_CONFIG_H'; $UCX_INFO -b; echo '#endif'; } \
        > ucx_config/config.h
    AS_IF([grep -q '^#define UCX_CONFIG_H' ucx_config/config.h], [],
          [AC_MSG_ERROR([ucx_info -b did not print a config.h])])

    # The module's own headers come before UCX's: UCX >= 1.21 has a
    # src/uct/gaudi of its own (Intel's gaudi_gdr), with header paths that
    # ours would otherwise lose to.
    UCX_GAUDI_UCX_CPPFLAGS="-DHAVE_CONFIG_H -I\$(abs_top_builddir)/ucx_config -I\$(top_srcdir)/src -I$UCX_SRC_DIR/src $UCX_CFLAGS"

    save_CPPFLAGS="$CPPFLAGS"
    CPPFLAGS="$CPPFLAGS -DHAVE_CONFIG_H -I`pwd`/ucx_config -I$UCX_SRC_DIR/src $UCX_CFLAGS"
    AC_CHECK_HEADER([uct/base/uct_md.h], [],
        [AC_MSG_ERROR([cannot compile UCX internal headers from $UCX_SRC_DIR])])
    CPPFLAGS="$save_CPPFLAGS"

    UCX_GAUDI_PROBE_UCX([-DHAVE_CONFIG_H -I`pwd`/ucx_config -I$UCX_SRC_DIR/src $UCX_CFLAGS])
    # The UCX gtest subset allocates Gaudi memory through a HIP shim
    # (test/gtest/ucx) where Gaudi memory is the ROCM slot (no
    # UCS_MEMORY_TYPE_GAUDI) and UCX's test allocator never writes ROCm
    # memory with the CPU; elsewhere (UCX 1.16+: mem_buffer::memset writes
    # small ROCm buffers directly) through a Gaudi path generated into the
    # release's own allocator.
    AC_MSG_CHECKING([whether UCX's gtest allocator takes the HIP shim])
    AS_IF([grep -q 'UCT_GAUDI_HAVE_MEMORY_TYPE_GAUDI 0' ucx_config/uct_gaudi_ucx_features.h &&
           ! grep -q 'length <= 8' "$UCX_SRC_DIR/test/gtest/common/mem_buffer.cc" 2>/dev/null],
          [ucx_gaudi_gtest_hip=yes], [ucx_gaudi_gtest_hip=no])
    AC_MSG_RESULT([$ucx_gaudi_gtest_hip])
    AM_CONDITIONAL([UCX_GAUDI_MEM_ROCM_SLOT], [test $ucx_gaudi_gtest_hip = yes])

    AC_SUBST([UCX_PREFIX])
    AC_SUBST([UCX_VERSION])
    AC_SUBST([UCX_SRC_DIR])
    AC_SUBST([UCX_GAUDI_UCX_CPPFLAGS])
])
