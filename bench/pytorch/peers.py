"""The peers loom's edtPyTorch is measured against, on the example's model
and data (examples/pytorch-fmnist):

  python3 peers.py plain --epochs E --global-batch B   single process, plain loop
  torchrun --nproc_per_node 2 peers.py ddp --epochs E --global-batch B
                                                       DistributedDataParallel, gloo
  python3 peers.py step --batch B                      the bare PyTorch step, timed

Prints one JSON line: test accuracy, training samples/s (epochs' time only,
no start-up), and for `step` the mean seconds of forward+backward+step.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "pytorch-fmnist"))
os.environ.setdefault("FABRIC_HOME", "/nonexistent")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from idx_dataset import IdxDataset  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("mode", choices=["plain", "ddp", "step"])
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--global-batch", type=int, default=128)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--train-samples", type=int, default=0)
p.add_argument("--test-samples", type=int, default=0)
p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
p.add_argument("--seed", type=int, default=1)
args = p.parse_args()


def net():
    # The example's model, without running the example's FabricModel code.
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "fmnist_model", os.path.join(HERE, "..", "..", "examples", "pytorch-fmnist", "fmnist.py"))
    src = open(spec.origin).read()
    model_src = src[src.index("class Net"):src.index("def get_dataset")]
    ns = {"nn": nn, "F": torch.nn.functional, "torch": torch}
    exec(model_src, ns)  # noqa: S102 - our own example's class
    return ns["Net"]()


def evaluate(model, test):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(test), 1000):
            x, y = test.images[i:i + 1000], test.labels[i:i + 1000]
            correct += int((model(x).argmax(1) == y).sum())
    return correct / len(test)


def main():
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    train = IdxDataset(args.data, "train", args.train_samples)
    test = IdxDataset(args.data, "t10k", args.test_samples)
    model = net()
    loss_fn = nn.CrossEntropyLoss()
    if args.mode == "step":
        opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
        x, y = train.images[:args.batch], train.labels[:args.batch]
        times = []
        for i in range(60):
            t = time.perf_counter()
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            if i >= 10:
                times.append(time.perf_counter() - t)
        print(json.dumps({"mode": "step", "batch": args.batch, "step_s": sum(times) / len(times)}))
        return
    rank, world = 0, 1
    if args.mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    per = args.global_batch // world
    sampler = torch.utils.data.DistributedSampler(train, world, rank, shuffle=True, seed=args.seed) \
        if world > 1 else torch.utils.data.RandomSampler(train)
    loader = torch.utils.data.DataLoader(train, batch_size=per, sampler=sampler, drop_last=False)
    seconds = 0.0
    for epoch in range(args.epochs):
        if world > 1:
            sampler.set_epoch(epoch)
        model.train()
        t = time.perf_counter()
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        seconds += time.perf_counter() - t
    if rank == 0:
        acc = evaluate(model.module if world > 1 else model, test)
        print(json.dumps({"mode": args.mode, "workers": world, "accuracy": acc,
                          "samples_per_s": len(train) * args.epochs / seconds}))


main()
