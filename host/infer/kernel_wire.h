/*
 * infer/kernel_wire.h - the frames between the host and a `loom kernel
 * run` child, on the child's socket (plugin_wire.h encoding: u32 length,
 * then the payload):
 *   child -> host, once: READY  u8 status (0 ok), i32 code, str message;
 *                        with status 0 the arena's memfd rides along
 *                        (SCM_RIGHTS)
 *   host -> child:       EXEC   u8 KERNEL_OP_EXECUTE, u32 n,
 *                               n x (u64 offset, u64 length) in half one
 *   child -> host:       DONE   u8 0, u32 n, n x (i32 status, str type,
 *                               u64 offset, u64 length) in half two
 * The host closing the socket tells the child to unload and exit.
 */
#ifndef LOOM_INFER_KERNEL_WIRE_H
#define LOOM_INFER_KERNEL_WIRE_H

#define KERNEL_OP_EXECUTE 1
/* The most requests one batch frame may carry. */
#define KERNEL_BATCH_MAX 1024

#endif
