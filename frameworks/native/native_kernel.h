/*
 * native_kernel.h - the native adapter's inference kernel ("native",
 * loom.kernel/1): serves a model this adapter trained, from the trainer's
 * RESULT_DIR/model/ (model.safetensors and the job's spec, edt.json), with
 * KServe v2 / Triton JSON: {"inputs": [{"name", "shape", "datatype",
 * "data"}]} answered {"outputs": [{"name": "logits", ...}, {"name":
 * "label", ...}]}. All requests of a batch run as one forward pass.
 */
#ifndef NATIVE_KERNEL_H
#define NATIVE_KERNEL_H

#include <loom/loom.h>

void native_kernel_set_host(const loom_host *host);
const loom_kernel_factory *native_kernel_factory(void);

#endif
