loom.register_logger{
    name = "typo",
    log_train_metric = function(inst, metrics, iteration, epoch, workers) end,
}
