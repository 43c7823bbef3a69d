-- A launch-style framework: one worker per requested worker, with the
-- request echoed into argv and env so the test can see every field arrive.
local two = load("return 1 + 1")() -- text chunks load, in the script's env

loom.register_framework{
    name = "echo-launch",
    version = "0.3",
    description = "echoes the launch request",
    style = "launch",
    plan = function(req)
        local workers = {}
        for rank = 0, req.num_workers - 1 do
            local argv = {"sh", req.model_main, "--exec", req.exec_id}
            for _, a in ipairs(req.args) do argv[#argv + 1] = a end
            local env = {RANK = rank, MASTER = req.master_addr .. ":" .. req.master_port,
                         TWO = two, DEVICE = req.device_type}
            if rank == 1 then
                -- the array form, and a cwd
                env = {"RANK=" .. rank, req.msd_env[1]}
                workers[#workers + 1] = {argv = argv, env = env, cwd = req.data_dir}
            else
                workers[#workers + 1] = {argv = argv, env = env}
            end
        end
        return workers
    end,
}
