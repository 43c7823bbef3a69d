loom.register_search{
    name = "extra",
    suggest = function(max, sink) end,
    observe = function(obs, sink) end,
    max_parallel = 4,
}
