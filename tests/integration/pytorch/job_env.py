"""A FabricModel script for what a job is told: it records TRAINING_ID and
SUBID, and its loggers record what they hear. Its metric `worker_pid` is
each worker's own process id, so the workers' metrics differ and the
driver's average of them can be checked. Under a tuning task it also reads
config.json and the trainer writes val_dict_list.json."""
import json
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.getenv("FABRIC_HOME"), "libs", "fabric.zip"))
from fabric_model import FabricModel  # noqa: E402
from callbacks import LoggerCallback  # noqa: E402

with open(os.path.join(os.environ["RESULT_DIR"], "env-%d.json" % os.getpid()), "w") as f:
    json.dump({k: os.environ.get(k) for k in ("TRAINING_ID", "SUBID", "DLI_EXECID")}, f)
LR = 0.02
if os.path.exists("config.json"):
    with open("config.json") as f:
        LR = float(json.load(f).get("lr", LR))


def make(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 8, generator=g) * 0.3
    x[torch.arange(n), y] += 1.5
    return torch.utils.data.TensorDataset(x, y)


def get_dataset():
    return make(600, 1), make(200, 2)


def worker_pid(output, target):
    return float(os.getpid())


class Recorder(LoggerCallback):
    def __init__(self, role):
        self.role = role

    def _log(self, **record):
        path = os.path.join(os.environ["LOG_DIR"], "%s-%d.jsonl" % (self.role, os.getpid()))
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def log_train_metrics(self, metrics, iteration, epoch, workers):
        self._log(kind="train", iteration=iteration, epoch=epoch, workers=workers, **metrics)

    def log_test_metrics(self, metrics, iteration, epoch):
        self._log(kind="test", iteration=iteration, epoch=epoch, **metrics)


model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=LR)
edt = FabricModel(model, get_dataset, nn.CrossEntropyLoss(), optimizer, metrics=[worker_pid],
                  worker_logger_callback=Recorder("worker"), driver_logger_callback=Recorder("driver"))
edt.train(2, 16)
