-- A logger that aims loom.append at the host's files: training.json (a
-- plain name, so it lands in its own folder), the driver's stdout through
-- "..", and a hidden file.
loom.register_logger{
    name = "targeter",
    on_train_begin = function(info)
        loom.append("training.json", "{\"forged\": true}")
    end,
    log_train_metrics = function(metrics, iteration, epoch, workers)
        loom.append("../../log/driver/stdout", "forged line\n")
    end,
    on_train_end = function(status, message)
        loom.append(".hidden", "x")
    end,
}
