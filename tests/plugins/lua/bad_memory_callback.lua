loom.register_kernel{
    name = "hoarder",
    execute = function(requests)
        local hoard = {}
        for i = 1, math.huge do hoard[i] = string.rep("0123456789abcdef", 1 << 16) .. i end
    end,
}
