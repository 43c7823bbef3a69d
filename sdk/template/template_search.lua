-- template_search.lua - a search algorithm in Lua: proposes `count` random
-- points (algoParams, default 4) from the Range parameters of the space,
-- then finishes; it saves and restores its state, so a tuning task
-- survives a host restart.
local state = {proposed = 0, best = nil}
local config

loom.register_search{
    name = "lua_template_search",
    version = "0.1.0",
    description = "Random points from the Range parameters (Lua template)",
    init = function(c)
        config = c
        math.randomseed(c.seed)
    end,
    suggest = function(max, sink)
        local count = tonumber(config.params.count or "4")
        for _ = 1, max do
            if state.proposed >= count then
                sink.finish()
                return
            end
            local point = {}
            for _, p in ipairs(config.space) do
                if p.type == "Range" and p.dataType == "DOUBLE" then
                    point[p.name] = p.minDbVal + math.random() * (p.maxDbVal - p.minDbVal)
                elseif p.type == "Range" and p.dataType == "INT" then
                    point[p.name] = math.random(p.minIntVal, p.maxIntVal)
                end
            end
            if sink.propose(point) then
                state.proposed = state.proposed + 1
            end
        end
    end,
    observe = function(id, status, metrics)
        local value = metrics[config.objective_metric]
        if status == "FINISHED" and value then
            local better = state.best == nil or
                (config.maximize and value > state.best) or
                (not config.maximize and value < state.best)
            if better then state.best = value end
        end
    end,
    save_state = function() return loom.json_encode(state) end,
    load_state = function(text) state = loom.json_decode(text) end,
}
