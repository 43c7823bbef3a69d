#!/usr/bin/env bash
# The SDK as a third party gets it: `cmake --install` into a fresh prefix,
# then plugins built out of tree against the installed SDK alone (the
# template project through find_package(loom), and a plain compiler call
# through pkg-config), checked by the installed loom, whose host also finds
# its installed built-in plugins.
LOOM=$1
SRC=$3
BUILD=$4
. "$(dirname "$0")/../lib.sh"

PREFIX="$WORK/prefix"
expect_ok "cmake --install" cmake --install "$BUILD" --prefix "$PREFIX"
expect_ok "headers installed" test -f "$PREFIX/include/loom/loom.h"
expect_ok "CMake package installed" test -f "$PREFIX/lib/cmake/loom/loomConfig.cmake"
pcdir=$(dirname "$(find "$PREFIX" -name loom.pc | head -n1)")
expect_ok "pkg-config file installed" test -f "$pcdir/loom.pc"
INSTALLED="$PREFIX/bin/loom"
expect_ok "binary installed" test -x "$INSTALLED"

expect_ok "template installed" test -f "$PREFIX/share/loom/template/CMakeLists.txt"
expect_ok "Lua reference installed" test -f "$PREFIX/share/loom/lua/REFERENCE.md"

# The installed template, out of tree, with nothing of loom's source tree.
cp -r "$PREFIX/share/loom/template" "$WORK/template"
expect_ok "template configures against the installed SDK" \
    cmake -S "$WORK/template" -B "$WORK/template/build" -DCMAKE_PREFIX_PATH="$PREFIX"
expect_ok "template builds" cmake --build "$WORK/template/build"
n=0
for so in "$WORK"/template/build/*.so; do
    [ -e "$so" ] || continue
    n=$((n + 1))
    expect_ok "installed loom accepts $(basename "$so")" "$INSTALLED" plugin check "$so"
done
expect_eq "the template builds one plugin per kind" "$n" "4"
kinds=$(for so in "$WORK"/template/build/*.so; do "$INSTALLED" plugin check "$so"; done | awk '{print $2}' | sort | tr '\n' ' ')
expect_eq "one of each kind" "$kinds" "framework kernel logger search "
kinds=$(for lua in "$WORK"/template/*.lua; do "$INSTALLED" plugin check "$lua"; done | awk '{print $2}' | sort | tr '\n' ' ')
expect_eq "one Lua template of each kind, each accepted" "$kinds" "framework kernel logger search "

# A plugin compiled with only the compiler and pkg-config's flags.
cflags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags loom)
incdir=$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=includedir loom)
expect_eq "pkg-config's include dir is the installed one" "$(cd "$incdir" && pwd -P)" "$(cd "$PREFIX/include" && pwd -P)"
expect_ok "plain cc build against the installed headers" \
    cc -std=c11 -Wall -Werror $cflags -shared -fPIC -Wl,--no-undefined \
       -o "$WORK/thirdparty.so" "$SRC/tests/plugins/abi/good_thirdparty.c"
out=$("$INSTALLED" plugin check "$WORK/thirdparty.so")
expect_contains "installed loom loads it" "$out" "ok: logger good_thirdparty"

# The installed host finds the installed built-in plugins.
LOOM=$INSTALLED
start_host
list=$("$LOOM" plugin list)
expect_contains "installed host has its built-ins" "$list" "command"
expect_contains "built-ins are loaded" "$list" "builtin  loaded"
stop_host TERM
finish
