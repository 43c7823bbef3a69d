-- algorithms/examples/lua_search/coordinate_search.lua - an example search
-- plugin in Lua ("example_coordinate"): starts at the middle of every range
-- (the first value of every list), then tries each parameter's neighbours
-- in turn around the best point so far: ranges move by a quarter, halving
-- after every sweep without improvement; lists try every value. It
-- finishes after max_experiments (or 12), and saves its state.
local config, state

local function middle(p)
    if p.kind == "choice" then return 1 end
    return 0.5
end

-- position (0..1 for ranges, an index for lists) -> the value
local function value_of(p, pos)
    if p.kind == "choice" then return p.choices[pos] end
    local x = p.low + pos * (p.high - p.low)
    if p.log_base > 1 then x = p.log_base ^ x end
    if p.type == "int" then x = math.floor(x + 0.5) end
    return x
end

local function point_of(pos)
    local point = {}
    for i, p in ipairs(config.space) do point[p.name] = value_of(p, pos[i]) end
    return point
end

-- the next position to try: a step of the current parameter from the best
local function next_position()
    local pos = {}
    for i, v in ipairs(state.best) do pos[i] = v end
    local i = state.dim
    local p = config.space[i]
    if p.kind == "choice" then
        pos[i] = (pos[i] % #p.choices) + 1
    else
        local moved = pos[i] + state.sign * state.step
        pos[i] = math.max(0, math.min(1, moved))
    end
    state.sign = -state.sign
    if state.sign > 0 then
        state.dim = state.dim % #config.space + 1
        if state.dim == 1 then
            if not state.improved then state.step = state.step / 2 end
            state.improved = false
        end
    end
    return pos
end

loom.register_search{
    name = "example_coordinate",
    version = "1.0.0",
    description = "Example: coordinate search around the best point (Lua)",
    init = function(c)
        config = c
        local best = {}
        for i, p in ipairs(c.space) do best[i] = middle(p) end
        state = {best = best, best_loss = nil, dim = 1, sign = 1, step = 0.25,
                 improved = false, proposed = 0, pending = {}}
    end,
    suggest = function(max, sink)
        local limit = config.max_experiments > 0 and config.max_experiments or 12
        for _ = 1, max do
            if state.proposed >= limit then
                sink.finish()
                return
            end
            local pos = state.proposed == 0 and state.best or next_position()
            local id = sink.propose(point_of(pos))
            if not id then return end
            state.pending[tostring(id)] = pos
            state.proposed = state.proposed + 1
        end
    end,
    observe = function(obs)
        local pos = state.pending[tostring(obs.id)]
        state.pending[tostring(obs.id)] = nil
        if obs.status ~= "FINISHED" or obs.objective == nil or pos == nil then return end
        local loss = config.maximize and -obs.objective or obs.objective
        if state.best_loss == nil or loss < state.best_loss then
            state.best_loss, state.best, state.improved = loss, pos, true
        end
    end,
    save_state = function() return loom.json_encode(state) end,
    load_state = function(text) state = loom.json_decode(text) end,
}
