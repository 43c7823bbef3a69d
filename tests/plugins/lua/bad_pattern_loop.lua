-- A driver logger with a pathological pattern: string.find backtracks in
-- C, where the count hook never fires, for far longer than any deadline.
loom.register_logger{
    name = "bad_pattern_loop",
    log_train_metrics = function(metrics, iteration, epoch, workers)
        local s = string.rep("a", 60000)
        string.find(s, string.rep("a-", 40) .. "b")
    end,
}
