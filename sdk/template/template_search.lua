-- template_search.lua - a search algorithm in Lua: proposes `count` random
-- points (algoParams, default 4) and then finishes; it saves and restores
-- its state, so a tuning task survives a host restart.
--
-- config.space is the typed space: an array of
--   {name=, kind="range", type="double"|"int", low=, high=, step=, log_base=}
--   {name=, kind="choice", type="double"|"int"|"string", choices={...}}
-- With log_base > 1, low and high bound the exponent.
local state = {proposed = 0, best = nil}
local config

local function sample(p)
    if p.kind == "choice" then
        return p.choices[math.random(#p.choices)]
    end
    local x
    if p.type == "int" and p.log_base == 0 then
        x = math.random(math.tointeger(p.low), math.tointeger(p.high))
    else
        x = p.low + math.random() * (p.high - p.low)
    end
    if p.log_base > 1 then x = p.log_base ^ x end
    if p.type == "int" then x = math.floor(x + 0.5) end
    return x
end

loom.register_search{
    name = "lua_template_search",
    version = "0.2.0",
    description = "Random points from the space (Lua template)",
    init = function(c)
        config = c
        math.randomseed(c.seed)
    end,
    suggest = function(max, sink)
        local count = tonumber(config.options.count or "4")
        for _ = 1, max do
            if state.proposed >= count then
                sink.finish()
                return
            end
            local point = {}
            for _, p in ipairs(config.space) do
                point[p.name] = sample(p)
            end
            if sink.propose(point) then
                state.proposed = state.proposed + 1
            end
        end
    end,
    observe = function(obs)
        local value = obs.objective
        if obs.status == "FINISHED" and value then
            local better = state.best == nil or
                (config.maximize and value > state.best) or
                (not config.maximize and value < state.best)
            if better then state.best = value end
        end
    end,
    save_state = function() return loom.json_encode(state) end,
    load_state = function(text) state = loom.json_decode(text) end,
}
