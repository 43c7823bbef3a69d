-- suggest fails at a known line; observe fails with a chosen code.
loom.register_search{
    name = "broken",
    suggest = function(max, sink)
        local missing = nil
        return missing.field
    end,
    observe = function(obs)
        error({code = "invalid_argument", message = "experiment " .. obs.id .. " is unknown"})
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
    observe = function(obs)
        kept.propose{lr = 1}
    end,
}
