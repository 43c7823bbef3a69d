-- suggest spins forever, even catching the deadline error with pcall.
loom.register_search{
    name = "spinner",
    suggest = function(max, sink)
        while true do
            pcall(function() while true do end end)
        end
    end,
    observe = function(obs, sink) end,
}
