"""bench/train/torch_train.py - the PyTorch side of bench/train: the same
models, data and schedule as loom's elastic trainer, in one of three shapes:

  single  one process, batch B
  ddp     N processes, DistributedDataParallel over gloo on 127.0.0.1,
          batch B per process (global batch N*B, gradients averaged), the
          shape loom's trainer has with N workers
  nosync  N processes that never exchange gradients (each trains its own
          copy on its own share): the ceiling for N processes on this
          machine, since nothing is communicated

Every process runs torch.set_num_threads(1) and reads Fashion-MNIST from the
same IDX files loom reads (numpy + gzip, no torchvision). Each epoch uses a
fresh permutation split rank::world, like DistributedSampler; a batch is
gathered by index from tensors held in memory (the collation loom's native
adapter does). Processes meet at a barrier before each epoch (nosync too:
once per epoch costs nothing) so epoch times are comparable.

Prints one line per epoch and a last line
  RESULT <mode> <procs> <model> <steady samples/s> <test loss> <test accuracy>
where the steady rate is the last epoch's (the first pays for warm-up) and
the test figures are "-" without --eval.

  python3 torch_train.py --mode ddp --procs 2 --epochs 2 --batch 64
  python3 torch_train.py --mode ddp --procs 2 --epochs 10 --model cnn --eval \
      --spec models/cnn/edt.json
"""
import argparse
import gzip
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def read_idx(path, header_bytes):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=header_bytes)


def load(data, split):
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(f"{data}/{prefix}-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28)
    labels = read_idx(f"{data}/{prefix}-labels-idx1-ubyte.gz", 8)
    return (torch.from_numpy(images.astype(np.float32) / 255.0),
            torch.from_numpy(labels.astype(np.int64)))


def build_model(kind):
    nn = torch.nn
    if kind == "mlp":  # the same layers as bench/train/models/mlp.json
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                             nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    if kind == "cnn":  # bench/train/models/cnn.json
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    raise SystemExit(f"torch_train.py: --model: expected mlp or cnn, got {kind!r}")


def evaluate(model, x, y):
    model.eval()
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    loss, hits = 0.0, 0
    with torch.no_grad():
        for at in range(0, x.shape[0], 1000):
            out = model(x[at:at + 1000])
            loss += loss_fn(out, y[at:at + 1000]).item()
            hits += (out.argmax(1) == y[at:at + 1000]).sum().item()
    model.train()
    return loss / x.shape[0], hits / x.shape[0]


def train(rank, world, args, port, results):
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # every process starts from the same weights
    distributed = args.mode != "single"
    if distributed:  # port None: started by torchrun, which set MASTER_ADDR and _PORT
        dist.init_process_group("gloo", init_method="env://" if port is None
                                else f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    x_all, y_all = load(args.data, "train")
    model = build_model(args.model)
    net = model
    if args.mode == "ddp":
        net = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    sched = torch.optim.lr_scheduler.StepLR(opt, args.lr_step, args.lr_gamma) if args.lr_step else None
    loss_fn = torch.nn.CrossEntropyLoss()
    n = x_all.shape[0]
    rows = []
    for epoch in range(args.epochs):
        order = torch.randperm(n, generator=torch.Generator().manual_seed(args.seed * 1000 + epoch))
        mine = order[rank::world]
        if distributed:
            dist.barrier()
        started = time.perf_counter()
        loss_sum = 0.0
        for at in range(0, mine.shape[0], args.batch):
            idx = mine[at:at + args.batch]
            x, y = x_all[idx], y_all[idx]
            opt.zero_grad(set_to_none=False)
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            loss_sum += loss.item() * idx.shape[0]
        seconds = time.perf_counter() - started
        if sched:
            sched.step()
        rows.append((epoch + 1, mine.shape[0], seconds, loss_sum / mine.shape[0]))
    test = ("-", "-")
    if args.eval and rank == 0:
        tx, ty = load(args.data, "test")
        test = tuple(f"{v:.4f}" for v in evaluate(model, tx, ty))
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    results.put((rank, rows, test))


def take_schedule(args, path):
    """Reads SGD's lr and momentum and a step lr_schedule from loom's spec,
    so both sides train with the same schedule by construction."""
    with open(path) as f:
        spec = json.load(f)
    opt = spec.get("optimizer", {})
    if opt.get("type") != "sgd" or opt.get("nesterov") or opt.get("weight_decay"):
        sys.exit(f"torch_train.py: {path}: optimizer: only plain SGD with momentum is mirrored here")
    args.lr = opt["lr"]
    args.momentum = opt.get("momentum", 0.0)
    sched = spec.get("lr_schedule", {"type": "constant"})
    if sched["type"] == "step":
        args.lr_step, args.lr_gamma = sched["step_size"], sched.get("gamma", 0.1)
    elif sched["type"] != "constant":
        sys.exit(f"torch_train.py: {path}: lr_schedule: only constant and step are mirrored here")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_main(args):
    """This process is one rank of a torchrun job (across machines): rank
    0's epoch times stand for the job's, every step being synchronous."""
    import queue
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    out = queue.SimpleQueue()
    train(rank, world, args, None, out)
    _, rows, test = out.get()
    if rank != 0:
        return
    rate = 0.0
    for epoch, samples, seconds, loss in rows:
        rate = samples * world / seconds
        print(f"epoch {epoch}: {samples * world} samples in {seconds:.2f} s, {rate:.0f} samples/s, "
              f"train loss {loss:.4f}", flush=True)
    print(f"RESULT torchrun {world} {args.model} {rate:.0f} {test[0]} {test[1]}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("single", "ddp", "nosync"), default="single")
    ap.add_argument("--procs", type=int, default=1)
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--lr-step", type=int, default=0, help="StepLR step size in epochs (0: constant)")
    ap.add_argument("--lr-gamma", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval", action="store_true", help="report test loss and accuracy at the end")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--spec", help="loom's edt.json: take the optimizer and lr_schedule from it")
    ap.add_argument("--torchrun", action="store_true",
                    help="one process of a torchrun job (RANK, WORLD_SIZE from its environment); "
                         "rank 0 prints the job's figures")
    args = ap.parse_args()
    if args.spec:
        take_schedule(args, args.spec)
    world = 1 if args.mode == "single" else args.procs
    if not os.path.exists(f"{args.data}/train-images-idx3-ubyte.gz"):
        sys.exit(f"torch_train.py: Fashion-MNIST not found in {args.data}")

    if args.torchrun:
        torchrun_main(args)
        return
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=train, args=(r, world, args, port, results)) for r in range(world)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        sys.exit("torch_train.py: a training process failed")
    got = sorted(results.get() for _ in range(world))
    test = got[0][2]
    rate = 0.0
    for e in range(args.epochs):
        # The epoch ends when its slowest process ends.
        samples = sum(rows[e][1] for _, rows, _ in got)
        seconds = max(rows[e][2] for _, rows, _ in got)
        loss = sum(rows[e][3] * rows[e][1] for _, rows, _ in got) / samples
        rate = samples / seconds
        print(f"epoch {e + 1}: {samples} samples in {seconds:.2f} s, {rate:.0f} samples/s, "
              f"train loss {loss:.4f}", flush=True)
    print(f"RESULT {args.mode} {world} {args.model} {rate:.0f} {test[0]} {test[1]}", flush=True)


if __name__ == "__main__":
    main()
