"""bench/comm/gloo_allreduce.py - the peer's figure: torch.distributed
all_reduce with the gloo backend between local processes, reported like
comm_bench: "RESULT gloo <bytes> <bus GB/s> <ms per op>".

    python3 gloo_allreduce.py BYTES [ITERATIONS [PROCESSES]]
    python3 gloo_allreduce.py BYTES ITERATIONS --rank R --world W --init tcp://HOST:PORT

The second form is one process of a group spread over nodes (one per node,
bench/cluster/allreduce.sh): rank 0 listens on HOST:PORT for the others and
prints the result.
"""
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WARMUP_ITERATIONS = 3


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, init, floats, iterations, results):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    buf = torch.arange(floats, dtype=torch.float32) * 0.001 + rank
    for _ in range(WARMUP_ITERATIONS):
        dist.all_reduce(buf)
    dist.barrier()
    started = time.perf_counter_ns()
    for _ in range(iterations):
        dist.all_reduce(buf)
        buf.div_(world)  # an average, like loom's
    dist.barrier()
    if rank == 0:
        results.put(time.perf_counter_ns() - started)
    dist.destroy_process_group()


def report(nbytes, world, iterations, elapsed_ns):
    per_op_ns = elapsed_ns / iterations
    bus_bytes = 2.0 * (world - 1) / world * nbytes
    print(f"RESULT gloo {nbytes} {bus_bytes / per_op_ns:.3f} {per_op_ns / 1e6:.3f}")


class OneResult:
    """The queue of the one-process form: rank 0's elapsed time."""
    value = None

    def put(self, value):
        self.value = value


def main_one(nbytes, iterations, args):
    """One process of a group across nodes: --rank R --world W --init URL."""
    opts = dict(zip(args[0::2], args[1::2]))
    if set(opts) != {"--rank", "--world", "--init"}:
        sys.exit("gloo_allreduce: expected --rank R --world W --init tcp://HOST:PORT")
    rank, world = int(opts["--rank"]), int(opts["--world"])
    result = OneResult()
    worker(rank, world, opts["--init"], nbytes // 4, iterations, result)
    if rank == 0:
        report(nbytes, world, iterations, result.value)


def main():
    nbytes = int(sys.argv[1]) // 4 * 4
    iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    if len(sys.argv) > 3 and sys.argv[3].startswith("--"):
        return main_one(nbytes, iterations, sys.argv[3:])
    world = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    init = f"tcp://127.0.0.1:{free_port()}"
    procs = [ctx.Process(target=worker,
                         args=(r, world, init, nbytes // 4, iterations, results))
             for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit("gloo_allreduce: a worker failed")
    report(nbytes, world, iterations, results.get())


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
