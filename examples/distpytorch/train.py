#!/usr/bin/env python3
"""Data-parallel training with torch.distributed for loom's `distPyTorch`
framework adapter: an MLP on Fashion-MNIST, one process per worker.

The adapter starts --numWorker copies of this script with MASTER_ADDR,
MASTER_PORT, WORLD_SIZE, RANK and LOCAL_RANK set (the env:// rendezvous),
and RESULT_DIR for the results. Each worker trains on its own shard of every
epoch (DistributedSampler) and DistributedDataParallel averages the
gradients. Worker 0 evaluates on the test set after every epoch, writes
RESULT_DIR/val_dict_list.json (WMLA's format) and, at the end, the weights
to RESULT_DIR/model/model.pt.

Arguments (after "--" on the loom command line): --epochs N, --batch-size N,
--lr X, --data DIR (default $DATA_DIR when it holds the files, else Debian's
/usr/share/datasets/fashion-mnist), --limit N (train on the first N samples,
for a quick check).
"""
import argparse
import gzip
import json
import os
import struct
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}


def read_idx(path):
    """An IDX file (gzip-compressed) as a uint8 tensor of its own shape."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load(data_dir, split, limit=0):
    images, labels = (read_idx(os.path.join(data_dir, name)) for name in FILES[split])
    if limit:
        images, labels = images[:limit], labels[:limit]
    return TensorDataset(images.float().div(255).flatten(1), labels.long())


def find_data(arg):
    candidates = [arg] if arg else [os.environ.get("DATA_DIR", ""),
                                    "/usr/share/datasets/fashion-mnist"]
    for d in candidates:
        if d and all(os.path.exists(os.path.join(d, f)) for f in FILES["train"]):
            return d
    sys.exit("Fashion-MNIST not found in " + " or ".join(c for c in candidates if c) +
             " (apt-get install dataset-fashion-mnist, or pass --data DIR)")


def evaluate(model, loader):
    model.eval()
    loss, hits, count = 0.0, 0, 0
    with torch.no_grad():
        for x, y in loader:
            out = model(x)
            loss += nn.functional.cross_entropy(out, y, reduction="sum").item()
            hits += (out.argmax(1) == y).sum().item()
            count += len(y)
    model.train()
    return loss / count, hits / count


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--data", default="")
    p.add_argument("--limit", type=int, default=0)
    args = p.parse_args()

    dist.init_process_group("gloo", init_method="env://")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1)  # the same initial weights on every worker
    data_dir = find_data(args.data)
    train = load(data_dir, "train", args.limit)
    sampler = DistributedSampler(train, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DistributedDataParallel(nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    test = DataLoader(load(data_dir, "test"), batch_size=1000) if rank == 0 else None
    result_dir = os.environ.get("RESULT_DIR", ".")
    history = []
    print(f"worker {rank} of {world}: {len(sampler)} of {len(train)} samples per epoch", flush=True)

    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for x, y in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()  # DistributedDataParallel averages the gradients here
            opt.step()
            total += loss.item()
            batches += 1
        print(f"worker {rank} epoch {epoch}: train loss {total / max(batches, 1):.4f}", flush=True)
        if rank == 0:
            test_loss, accuracy = evaluate(model.module, test)
            print(f"epoch {epoch}: test loss {test_loss:.4f} accuracy {accuracy:.4f}", flush=True)
            history.append({"step": epoch, "loss": test_loss, "accuracy": accuracy})
            with open(os.path.join(result_dir, "val_dict_list.json"), "w") as f:
                json.dump(history, f)

    if rank == 0:
        os.makedirs(os.path.join(result_dir, "model"), exist_ok=True)
        torch.save(model.module.state_dict(), os.path.join(result_dir, "model", "model.pt"))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
