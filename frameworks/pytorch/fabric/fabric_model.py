"""WMLA's elastic distributed training API, as loom runs it.

A script builds a FabricModel and calls train(); under loom's edtPyTorch
adapter the model, datasets, loss and optimizer go to loom's elastic
trainer, which owns the loop: sharding, gradient all-reduce, workers that
come and go, validation and checkpoints. Both generations of the logger
arguments are accepted: driver_logger=/worker_logger= (older) and
driver_logger_callback=/worker_logger_callback= (newer).
"""

__all__ = ["FabricModel"]


class FabricModel:
    def __init__(self, model, get_dataset, loss_function, optimizer, metrics=None,
                 worker_logger_callback=None, driver_logger_callback=None, save_to_onnx=False,
                 fn_batch_collate=None, driver_logger=None, worker_logger=None, **unused):
        if unused:
            raise TypeError("FabricModel() got unexpected keyword argument(s): %s"
                            % ", ".join(sorted(unused)))
        if not callable(get_dataset):
            raise TypeError("FabricModel: get_dataset must be a function returning "
                            "(train_dataset, test_dataset)")
        if worker_logger_callback is not None and worker_logger is not None:
            raise TypeError("FabricModel: give worker_logger_callback or worker_logger, not both")
        if driver_logger_callback is not None and driver_logger is not None:
            raise TypeError("FabricModel: give driver_logger_callback or driver_logger, not both")
        self.model = model
        self.get_dataset = get_dataset
        self.loss_function = loss_function
        self.optimizer = optimizer
        self.metrics = metrics
        self.worker_callback = worker_logger_callback if worker_logger_callback is not None else worker_logger
        self.driver_callback = driver_logger_callback if driver_logger_callback is not None else driver_logger
        self.save_to_onnx = bool(save_to_onnx)
        self.fn_batch_collate = fn_batch_collate

    def train(self, epoch_number, batch_size, engines_number=None, num_dataloader_threads=4,
              validation_freq=1, checkpoint_freq=1, effective_batch_size=None):
        try:
            import _loom
        except ImportError:
            raise RuntimeError("FabricModel.train() runs under loom's elastic trainer: submit the "
                               "script with 'loom exec start --exec-start edtPyTorch --model-main "
                               "SCRIPT'") from None
        settings = {"epoch_number": epoch_number, "batch_size": batch_size,
                    "engines_number": engines_number,
                    "num_dataloader_threads": num_dataloader_threads,
                    "validation_freq": validation_freq, "checkpoint_freq": checkpoint_freq,
                    "effective_batch_size": effective_batch_size}
        _loom.handover(self, settings)
        return self.model
