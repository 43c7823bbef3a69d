-- A logger whose xpcall body and message handler both loop: the count hook
-- stops the body by raising an error from inside the hook, and Lua runs
-- the handler for that error with hooks switched off, so unguarded the
-- handler would spin past any deadline.
loom.register_logger{
    name = "bad_xpcall_loop",
    log_train_metrics = function(metrics, iteration, epoch, workers)
        xpcall(function() while true do end end, function(msg)
            while true do end
        end)
    end,
}
