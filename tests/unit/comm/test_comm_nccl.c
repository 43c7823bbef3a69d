/*
 * tests/unit/comm/test_comm_nccl.c - the nccl back end as far as a machine
 * without a GPU can check it: it loads CUDA and NCCL on demand, refuses bad
 * arguments by name, and opening a device that is not there is a clear
 * error rather than a crash. With a GPU present, open succeeds instead.
 */
#include "../../check.h"
#include "comm.h"
#include "plugin/host_api.h"
#include "sched/sched.h"
#include "util/cuda_dl.h"

/* "" for no error, so CHECK_CONTAINS fails instead of dereferencing NULL. */
static const char *message_of(const loom_error *err)
{
    return err ? loom_err_message(err) : "";
}

int main(void)
{
    uint8_t id[COMM_NCCL_ID_BYTES];
    loom_error *err = comm_nccl_unique_id(id, 16);
    CHECK(err != NULL && loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(message_of(err), "must be 128 bytes, got 16");
    loom_err_free(err);

    int devices = sched_cuda_device_count();
    comm *c = NULL;
    err = comm_nccl_open(0, &c);
    const cuda_runtime_api *rt;
    loom_error *missing = cuda_runtime_load(&rt);
    if (missing) {
        /* No CUDA runtime on this machine (scripts/without-cuda): open
         * says which library it could not load. */
        CHECK(err != NULL && c == NULL && loom_err_code(err) == LOOM_E_UNAVAILABLE);
        CHECK_CONTAINS(message_of(err), "nccl open: the CUDA runtime cannot be loaded (tried "
                                        "libcudart.so");
        loom_err_free(err);
        loom_err_free(missing);
    } else if (devices == 0) {
        CHECK(err != NULL && c == NULL);
        CHECK_CONTAINS(message_of(err), "CUDA device 0");
        CHECK_CONTAINS(message_of(err), "CUDA error");
        loom_err_free(err);
    } else {
        CHECK(err == NULL && c != NULL);
        CHECK_STR_EQ(comm_backend_name(c), "nccl");
        /* Not joined: collectives say so. */
        float *dev = NULL;
        loom_error *e2 = comm_allreduce_avg_f32(c, dev, 0, comm_deadline_after_ms(10));
        CHECK(e2 != NULL);
        CHECK_CONTAINS(message_of(e2), "join one first");
        loom_err_free(e2);
        e2 = comm_nccl_join(c, 1, id, 4, 1, 0, comm_deadline_after_ms(10));
        CHECK(e2 != NULL && loom_err_code(e2) == LOOM_ERR_INVALID_ARGUMENT);
        loom_err_free(e2);
        comm_close(c);
    }

    /* The shm handle is not an nccl handle. */
    err = comm_nccl_shrink(NULL, 2, NULL, 0, comm_deadline_after_ms(10));
    CHECK(err != NULL && loom_err_code(err) == LOOM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(message_of(err), "no communicator to shrink");
    loom_err_free(err);
    return CHECK_DONE();
}
