-- A search over a fixed list of learning rates. Its whole state is saved
-- and loaded as JSON, so a second instance carries on where the first
-- stopped.
local state = {next = 1, lrs = {}, observed = {}, maximize = false}

loom.register_search{
    name = "list-search",
    version = "1.0",
    init = function(config)
        state.maximize = config.maximize
        state.metric = config.objective_metric
        for _, v in ipairs(config.space[1].discreteDbVal) do
            state.lrs[#state.lrs + 1] = v
        end
        state.eta = config.params.eta
    end,
    suggest = function(max, sink)
        for _ = 1, max do
            local lr = state.lrs[state.next]
            if lr == nil then
                sink.finish()
                return
            end
            local id = sink.propose{lr = lr, index = state.next, metric = state.metric}
            if id then state.next = state.next + 1 end
        end
    end,
    observe = function(id, status, metrics)
        state.observed[#state.observed + 1] =
            {id = id, status = status, loss = metrics.loss}
    end,
    save_state = function()
        return loom.json_encode(state)
    end,
    load_state = function(text)
        local decoded, err = loom.json_decode(text)
        if not decoded then error(err) end
        state = decoded
    end,
}
