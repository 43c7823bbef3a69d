"""Fashion-MNIST CNN in WMLA's FabricModel style (runs unchanged on WMLA).

    loom exec start --exec-start edtPyTorch --model-dir examples/pytorch-fmnist \
        --model-main fmnist.py --numWorker 2 \
        --cs-datastore-meta type=fs,data_path=fashion-mnist -- --epochs 2

DATA_DIR holds the four IDX files of Debian's dataset-fashion-mnist
(/usr/share/datasets/fashion-mnist), gzipped or not; nothing is downloaded.
"""
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

path = os.path.join(os.getenv("FABRIC_HOME"), "libs", "fabric.zip")
sys.path.insert(0, path)
from fabric_model import FabricModel  # noqa: E402

from edtcallback import EDTLoggerCallback  # noqa: E402
from idx_dataset import IdxDataset  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--train-samples", type=int, default=0, help="0: all 60000")
parser.add_argument("--test-samples", type=int, default=0, help="0: all 10000")
args, _ = parser.parse_known_args()

DATA_DIR = os.getenv("DATA_DIR", "/usr/share/datasets/fashion-mnist")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5)
        self.conv2 = nn.Conv2d(16, 32, 5)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def get_dataset():
    train = IdxDataset(DATA_DIR, "train", args.train_samples)
    test = IdxDataset(DATA_DIR, "t10k", args.test_samples)
    return train, test


def error_rate(output, target):
    return float((output.argmax(1) != target).float().mean())


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
loss_function = nn.CrossEntropyLoss()

edt_model = FabricModel(model, get_dataset, loss_function, optimizer, metrics=[error_rate],
                        worker_logger_callback=EDTLoggerCallback("worker"),
                        driver_logger_callback=EDTLoggerCallback("driver"))
edt_model.train(args.epochs, args.batch_size, engines_number=None, num_dataloader_threads=1,
                validation_freq=1, checkpoint_freq=1)
print("fmnist: training done")
