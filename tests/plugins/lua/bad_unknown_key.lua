loom.register_search{
    name = "extra",
    suggest = function(max, sink) end,
    observe = function(id, status, metrics) end,
    max_parallel = 4,
}
