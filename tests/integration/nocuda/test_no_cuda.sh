#!/usr/bin/env bash
# A CUDA build of loom on a machine without CUDA. The binary must not link
# the CUDA runtime, NCCL, or the libraries only some commands need (libcurl,
# libarchive, libmicrohttpd); with every CUDA library hidden it must print
# its version, stage tensors and open NCCL with errors naming the missing
# library, and run the demo (host, CLI, tar upload, a CPU training job) to
# the end. Skipped (77) where mount namespaces are not available.
LOOM=$1 SRC=$2 BUILD=$3 HAVE_CUDA=$4
. "$(dirname "$0")/../lib.sh"
hide="$SRC/scripts/without-cuda"

needed=$(readelf -d "$LOOM" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
expect_contains "readelf lists the libraries loom needs" "$needed" "libc.so"
for lib in libcudart libnccl libcuda.so libcublas libcurl libarchive libmicrohttpd libgnutls; do
    expect_not_contains "loom does not link $lib" "$needed" "$lib"
done

# without-cuda itself refuses to run a command while any CUDA library the
# loader knows of is still readable.
"$hide" true
rc=$?
[ "$rc" -eq 77 ] && exit 77
expect_eq "every CUDA library is hidden" "$rc" "0"

out=$("$hide" "$LOOM" version 2>&1)
expect_contains "loom version runs without CUDA" "$out" "loom "
if [ "$HAVE_CUDA" = ON ]; then
    expect_ok "tensor staging names the missing runtime" "$hide" "$BUILD/bin/test_tensor_stage"
    expect_ok "nccl open names the missing runtime" "$hide" "$BUILD/bin/test_comm_nccl"
fi

export TMPDIR=$WORK
out=$(timeout 280 "$hide" env -u LOOM_HOME -u LOOM_TOKEN "$LOOM" demo --epochs 1 2>&1)
rc=$?
expect_eq "loom demo exits 0 without CUDA" "$rc" "0"
expect_contains "the demo finished" "$out" "== demo finished"
expect_not_contains "nothing asked for CUDA" "$out" "libcudart"
[ "$FAILED" -eq 0 ] || echo "$out" | tail -n 40 >&2
finish
