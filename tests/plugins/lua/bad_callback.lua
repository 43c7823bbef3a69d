-- suggest fails at a known line; observe fails with a chosen code.
loom.register_search{
    name = "broken",
    suggest = function(max, sink)
        local missing = nil
        return missing.field
    end,
    observe = function(id, status, metrics)
        error({code = "invalid_argument", message = "experiment " .. id .. " is unknown"})
    end,
}

-- keeps the sink past suggest, and registers from a callback
local kept
loom.register_search{
    name = "stale",
    suggest = function(max, sink)
        kept = sink
        loom.register_logger{name = "late"}
    end,
    observe = function(id, status, metrics)
        kept.propose{lr = 1}
    end,
}
