loom.register_search{
    name = "half",
    suggest = function(max, sink) end,
}
