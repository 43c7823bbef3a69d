/*
 * infer/kernel_wire.h - the frames between the host and a `loom kernel
 * run` child, on the child's socket (plugin_wire.h encoding: u32 length,
 * then the payload):
 *   child -> host, once: READY  u8 status (0 ok), i32 code, str message;
 *                        with status 0 the arena's memfd rides along
 *                        (SCM_RIGHTS)
 *   host -> child:       EXEC   u8 KERNEL_OP_EXECUTE, u8 answer region (0|1),
 *                               u8 tensors (0|1), u32 n, n x (u64 offset,
 *                               u64 length) in the request region
 *   child -> host:       DONE   u8 0, u32 n, n x (i32 status, str type,
 *                               u64 offset, u64 length) in the answer region
 * With tensors 1 (a v2 model) each request is a tensor pack (v2_codec.h),
 * the decoded inputs; an answer of type KERNEL_TENSORS_TYPE is the pack of
 * the kernel's outputs, which the host encodes. Every offset is 8-byte
 * aligned, so a pack's data is aligned for its type.
 * The arena: the request region, then answer regions 0 and 1, each
 * KERNEL_ARENA_REGION bytes.
 * The host closing the socket tells the child to unload and exit.
 */
#ifndef LOOM_INFER_KERNEL_WIRE_H
#define LOOM_INFER_KERNEL_WIRE_H

#define KERNEL_OP_EXECUTE 1
/* The most requests one batch frame may carry. */
#define KERNEL_BATCH_MAX 1024
/* An answer that is a tensor pack (respond_tensors). */
#define KERNEL_TENSORS_TYPE "application/x-loom-tensors"

#endif
