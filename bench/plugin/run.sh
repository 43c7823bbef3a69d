#!/bin/sh
# bench/plugin/run.sh - the round trip of an empty logger callback in the
# host's process and through a `loom plugin-host` child, and the same for a
# search plugin's suggest (the target: out-of-process medians at most 50 us).
#
# usage: bench/plugin/run.sh [BUILD_DIR] [CALLS]   (default: build, 20000)
# The build needs the targets loom, loom_plugin_bench, empty_logger and random.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
calls=${2:-20000}
random="$build/lib/loom/plugins/random.so"
for f in "$build/bin/loom" "$build/bin/loom_plugin_bench" "$build/tests/plugins-out/empty_logger.so" "$random"; do
    [ -e "$f" ] || { echo "missing $f: build the tree first (cmake --build $build)" >&2; exit 1; }
done
"$build/bin/loom_plugin_bench" "$build/bin/loom" "$build/tests/plugins-out/empty_logger.so" "$random" "$calls"
