"""A small FabricModel script whose failure is chosen by FAULT (an --msd-env
pair): the integration test's bad inputs. Without FAULT it trains a small
MLP on separable synthetic data."""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.getenv("FABRIC_HOME"), "libs", "fabric.zip"))
from fabric_model import FabricModel  # noqa: E402
from callbacks import LoggerCallback  # noqa: E402

FAULT = os.getenv("FAULT", "")
EPOCHS = 2
BATCH = 16


def make(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 8, generator=g) * 0.3
    x[torch.arange(n), y] += 1.5
    return torch.utils.data.TensorDataset(x, y)


def image_folders():
    """torchvision's ImageFolder over DATA_DIR/{train,test}/CLASS/*.png: an
    8x8 image's column means are the 8 inputs."""
    from torchvision import datasets, transforms
    to_row = transforms.Compose([transforms.Grayscale(), transforms.ToTensor(),
                                 transforms.Lambda(lambda x: x.mean(1).flatten())])
    root = os.environ["DATA_DIR"]
    return (datasets.ImageFolder(os.path.join(root, "train"), to_row),
            datasets.ImageFolder(os.path.join(root, "test"), to_row))


def get_dataset():
    if FAULT == "imagefolder":
        return image_folders()
    if FAULT == "get_dataset":
        raise ValueError("no data here (FAULT=get_dataset)")
    if FAULT == "one_dataset":
        return make(600, 1)
    return make(600, 1), make(200, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        if FAULT == "forward":
            raise RuntimeError("broken forward (FAULT=forward)")
        if FAULT == "oom":
            torch.empty(1 << 42, dtype=torch.float32)
        return self.fc2(torch.relu(self.fc1(x)))


def accuracy_pct(output, target):
    if FAULT == "metric":
        raise ZeroDivisionError("broken metric (FAULT=metric)")
    return float((output.argmax(1) == target).float().mean() * 100)


class OldStyleLogger:
    """The older generation: loss, acc (percent), completed batches, worker."""

    def log_train_metrics(self, loss, acc, completed_batch, worker=0):
        if FAULT == "callback":
            raise KeyError("broken callback (FAULT=callback)")
        if completed_batch % 10 == 0:
            print("old-style train: loss %.3f acc %.1f batch %d worker %d" % (loss, acc, completed_batch, worker))

    def log_test_metrics(self, loss, acc, completed_batch, worker=0):
        print("old-style test: acc %.1f" % acc)
        with open(os.path.join(os.environ["RESULT_DIR"], "old_style_test.txt"), "a") as f:
            f.write("%.3f\n" % acc)

    def on_train_end(self):
        print("old-style end")


class NewStyleLogger(LoggerCallback):
    def log_test_metrics(self, metrics, iteration, epoch):
        print("new-style test: %s at %d epoch %d" % (sorted(metrics), iteration, epoch))
        # As WMLA's scripts do: the job's own val_dict_list.json, which wins
        # over the one the trainer would write.
        entry = dict(metrics, written_by="callback", epoch=epoch)
        with open(os.path.join(os.environ["RESULT_DIR"], "val_dict_list.json"), "w") as f:
            json.dump([entry], f)


model = Net()
if FAULT == "frozen":
    for p in model.parameters():
        p.requires_grad_(False)
params = Net().parameters() if FAULT == "foreign_optimizer" else model.parameters()
optimizer = torch.optim.Adam(params, lr=0.02)
if FAULT == "exit":
    sys.exit(3)
print("faults.py: building the FabricModel")
edt = FabricModel(model, get_dataset, nn.CrossEntropyLoss(), optimizer, metrics=[accuracy_pct],
                  worker_logger=OldStyleLogger(), driver_logger_callback=NewStyleLogger())
edt.train(EPOCHS, BATCH)
