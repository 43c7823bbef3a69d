"""Base class of the logger callbacks a FabricModel takes.

The newer generation overrides on_train_begin(), log_train_metrics(metrics,
iteration, epoch, workers), log_test_metrics(metrics, iteration, epoch) and
on_train_end(); the older one log_train_metrics(loss, acc, completed_batch,
worker=0), log_test_metrics(loss, acc, completed_batch, worker=0) and
on_train_end() with the accuracy in percent. loom tells them apart by the
method's parameters.
"""

__all__ = ["LoggerCallback"]


class LoggerCallback:
    def on_train_begin(self):
        pass

    def log_train_metrics(self, metrics, iteration, epoch, workers):
        pass

    def log_test_metrics(self, metrics, iteration, epoch):
        pass

    def on_train_end(self):
        pass
