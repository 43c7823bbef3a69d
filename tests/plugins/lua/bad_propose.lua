-- Proposes the point named by algoParams "case": each is wrong in one way
-- the bridge must refuse with the parameter named.
local case
local points = {
    missing = {lr = 0.1, act = "relu"},
    unknown = {lr = 0.1, width = 8, act = "relu", depth = 3},
    number = {lr = "fast", width = 8, act = "relu"},
    integer = {lr = 0.1, width = 8.5, act = "relu"},
    choice = {lr = 0.1, width = 8, act = "gelu"},
}
loom.register_search{
    name = "bad-points",
    init = function(config) case = config.options.case end,
    suggest = function(max, sink) sink.propose(points[case]) end,
    observe = function(obs) end,
}
