-- A driver logger whose xpcall message handler loops: Lua runs message
-- handlers with the count hook switched off, so in-process only a kill
-- can stop it.
loom.register_logger{
    name = "bad_xpcall_loop",
    log_train_metrics = function(metrics, iteration, epoch, workers)
        xpcall(function() error("boom") end, function(msg)
            while true do end
        end)
    end,
}
