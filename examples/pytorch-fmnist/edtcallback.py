"""A logger callback of the newer generation: it appends what it is told to
LOG_DIR/<role>-callback.jsonl, and the driver's writes
RESULT_DIR/callback_val.json at the end."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.getenv("FABRIC_HOME"), "libs", "fabric.zip"))
from callbacks import LoggerCallback  # noqa: E402


class EDTLoggerCallback(LoggerCallback):
    def __init__(self, role):
        self.role = role
        self.test = []

    def _log(self, **record):
        folder = os.getenv("LOG_DIR", ".")
        with open(os.path.join(folder, "%s-callback-%d.jsonl" % (self.role, os.getpid())), "a") as f:
            f.write(json.dumps(record) + "\n")

    def on_train_begin(self):
        self._log(event="begin")

    def log_train_metrics(self, metrics, iteration, epoch, workers):
        if iteration % 20 == 0:
            self._log(event="train", iteration=iteration, epoch=epoch, **metrics)

    def log_test_metrics(self, metrics, iteration, epoch):
        self.test.append(dict(metrics, epoch=epoch))
        self._log(event="test", iteration=iteration, epoch=epoch, **metrics)

    def on_train_end(self):
        self._log(event="end")
