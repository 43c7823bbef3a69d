-- template_framework.lua - a launch-style framework adapter in Lua: runs
-- --model-main once per worker with RANK and WORLD_SIZE set.
-- Register it with `loom framework add template_framework.lua`, then
-- `loom exec start --exec-start lua_template_framework --model-dir DIR --model-main main.sh`.
loom.register_framework{
    name = "lua_template_framework",
    version = "0.1.0",
    description = "Runs --model-main once per worker (Lua template)",
    style = "launch",
    plan = function(req)
        if not req.model_main then
            error({code = "invalid_argument", message = "--model-main is required"})
        end
        local workers = {}
        for rank = 0, req.num_workers - 1 do
            local argv = {"sh", req.model_main}
            for _, a in ipairs(req.args) do argv[#argv + 1] = a end
            workers[#workers + 1] = {
                argv = argv,
                env = {RANK = tostring(rank), WORLD_SIZE = tostring(req.num_workers)},
            }
        end
        return workers
    end,
}
