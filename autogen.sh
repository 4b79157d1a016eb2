#!/bin/sh
# Generate the configure script and Makefile.in files.
set -e
cd "$(dirname "$0")"
mkdir -p config/m4 config/aux
autoreconf -fi
