#!/bin/sh
# bench/plugin/run.sh - the round trip of an empty logger callback in the
# host's process and through a `loom plugin-host` child (the target: the
# out-of-process median at most 50 us).
#
# usage: bench/plugin/run.sh [BUILD_DIR] [CALLS]   (default: build, 20000)
# The build needs the targets loom, loom_plugin_bench and empty_logger.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
calls=${2:-20000}
for f in "$build/bin/loom" "$build/bin/loom_plugin_bench" "$build/tests/plugins-out/empty_logger.so"; do
    [ -e "$f" ] || { echo "missing $f: build the tree first (cmake --build $build)" >&2; exit 1; }
done
"$build/bin/loom_plugin_bench" "$build/bin/loom" "$build/tests/plugins-out/empty_logger.so" "$calls"
