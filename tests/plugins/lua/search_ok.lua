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
        for _, v in ipairs(config.space[1].choices) do
            state.lrs[#state.lrs + 1] = v
        end
        state.eta = config.options.eta
    end,
    suggest = function(max, sink)
        for _ = 1, max do
            local lr = state.lrs[state.next]
            if lr == nil then
                sink.finish()
                return
            end
            local id = sink.propose({lr = lr, index = state.next}, state.next)
            if id then state.next = state.next + 1 end
        end
    end,
    observe = function(obs, sink)
        state.observed[#state.observed + 1] =
            {id = obs.id, status = obs.status, loss = obs.objective,
             lr = obs.values.lr, accuracy = obs.metrics.accuracy}
        if obs.status == "FINISHED" and obs.objective > 1 then
            state.stopped = sink.stop(obs.id + 1)
        end
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
