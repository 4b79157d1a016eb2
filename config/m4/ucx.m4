#
# UCX detection: the installed binaries (pkg-config, ucx_info) and the
# matching source tree, whose internal headers the module is built against.
#
AC_DEFUN([UCX_GAUDI_CHECK_UCX], [
    PKG_CHECK_MODULES([UCX], [ucx >= 1.13], [],
        [AC_MSG_ERROR([UCX >= 1.13 not found: apt-get install libucx-dev ucx-utils])])
    UCX_VERSION=`$PKG_CONFIG --modversion ucx`

    AC_PATH_PROG([UCX_INFO], [ucx_info], [no])
    AS_IF([test "x$UCX_INFO" = xno],
          [AC_MSG_ERROR([ucx_info not found: apt-get install ucx-utils])])
    AC_MSG_CHECKING([version of the installed UCX binaries])
    ucx_bin_version=`$UCX_INFO -v | sed -n 's/^# Version \(.*\)$/\1/p'`
    AC_MSG_RESULT([$ucx_bin_version])
    AS_IF([test "x$ucx_bin_version" != "x$UCX_VERSION"],
          [AC_MSG_ERROR([ucx_info reports $ucx_bin_version but pkg-config reports $UCX_VERSION])])

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

    UCX_GAUDI_UCX_CPPFLAGS="-DHAVE_CONFIG_H -I\$(abs_top_builddir)/ucx_config -I$UCX_SRC_DIR/src"

    save_CPPFLAGS="$CPPFLAGS"
    CPPFLAGS="$CPPFLAGS -DHAVE_CONFIG_H -I`pwd`/ucx_config -I$UCX_SRC_DIR/src"
    AC_CHECK_HEADER([uct/base/uct_md.h], [],
        [AC_MSG_ERROR([cannot compile UCX internal headers from $UCX_SRC_DIR])])
    CPPFLAGS="$save_CPPFLAGS"

    AC_SUBST([UCX_VERSION])
    AC_SUBST([UCX_SRC_DIR])
    AC_SUBST([UCX_GAUDI_UCX_CPPFLAGS])
])
