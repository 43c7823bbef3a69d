"""The PyTorch side of bench/native: the same model (--model mlp: MLP
784-512-512-10; cnn: bench/train's 2-conv CNN, built by its torch_train.py),
SGD with momentum, batch 64, Fashion-MNIST held in memory and gathered by a
shuffled index per batch (the same collation work the native adapter does).
Prints samples/s over about --seconds after a short warm-up.
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np
import torch


def read_idx(path, offset):
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    images = read_idx(f"{args.data}/train-images-idx3-ubyte.gz", 16).reshape(-1, 784)
    labels = read_idx(f"{args.data}/train-labels-idx1-ubyte.gz", 8)
    x_all = torch.from_numpy(images.astype(np.float32) / 255.0)
    y_all = torch.from_numpy(labels.astype(np.int64))

    # One definition of each model: the one the training benchmark uses.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
    from torch_train import build_model
    model = build_model(args.model)
    if args.model == "cnn":
        x_all = x_all.reshape(-1, 1, 28, 28)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    perm = torch.randperm(x_all.shape[0])
    steps_per_epoch = x_all.shape[0] // args.batch

    step, timed, warmup, start = 0, 0, 20, 0.0
    while True:
        if step == warmup:
            start = time.perf_counter()
        at = (step % steps_per_epoch) * args.batch
        idx = perm[at:at + args.batch]
        x, y = x_all[idx], y_all[idx]
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step > warmup:
            timed += 1
            if time.perf_counter() - start >= args.seconds:
                break
    elapsed = time.perf_counter() - start
    print(f"pytorch {torch.__version__} ({args.threads} thread(s)): "
          f"{timed * args.batch / elapsed:.0f} samples/s "
          f"({timed} steps of {args.batch} in {elapsed:.2f} s, last loss {loss.item():.3f})")


if __name__ == "__main__":
    main()
