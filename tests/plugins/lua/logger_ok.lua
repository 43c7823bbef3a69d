-- A logger writing one line per callback into metrics.txt in its log_dir.
-- The same script also registers a search: one file, several kinds.
local prefix = "?"

loom.register_logger{
    name = "lines",
    init = function(config)
        prefix = config.role .. config.rank .. ":" .. (config.config.tag or "")
    end,
    on_train_begin = function(info)
        loom.log("info", "training " .. info.exec_id .. " begins")
        loom.append("metrics.txt", string.format("%s begin epochs=%d workers=%d\n",
            prefix, info.epochs, info.workers))
    end,
    log_train_metrics = function(metrics, iteration, epoch, workers)
        loom.append("metrics.txt", string.format("train it=%d epoch=%d workers=%d loss=%.2f\n",
            iteration, epoch, workers, metrics.loss))
    end,
    on_train_end = function(status, message)
        loom.append("metrics.txt", "end " .. status .. " " .. message .. "\n")
    end,
}

loom.register_search{
    name = "lines",
    suggest = function(max, sink) sink.finish() end,
    observe = function(obs, sink) end,
}
