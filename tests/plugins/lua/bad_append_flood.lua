-- A logger that tries to write 1 GiB through loom.append, 1 MiB at a time:
-- the exec's plugin write limit stops it.
loom.register_logger{
    name = "flooder",
    on_train_begin = function(info)
        local chunk = string.rep("x", 1024 * 1024)
        for i = 1, 1024 do
            loom.append("flood.txt", chunk)
        end
    end,
}
