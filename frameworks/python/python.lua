-- frameworks/python/python.lua - the built-in `python` launch adapter: runs
-- `python3 MODEL_MAIN args...` once per worker in the submitted code
-- directory, with the rank variables torch.distributed and friends read.
-- DATA_DIR, RESULT_DIR, LOG_DIR, CUDA_VISIBLE_DEVICES and the --msd-env
-- pairs come from the host's job environment.

loom.register_framework{
    name = "python",
    version = "1.0",
    description = "runs python3 MODEL_MAIN per worker with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and NODE_RANK set",
    style = "launch",
    plan = function(req)
        if req.model_main == nil or req.model_main == "" then
            error({code = "invalid_argument",
                   message = "--model-main is required for the python framework: name the "
                          .. "script to run, relative to the model directory "
                          .. "(e.g. --model-main train.py)"})
        end
        -- each rank's place on its node: req.worker_nodes by rank when the
        -- exec spans nodes, else one node holding every rank
        local nodes = req.worker_nodes or {}
        local local_rank, local_size, node_rank, node_of = {}, {}, {}, {}
        local count = 0
        for rank = 0, req.num_workers - 1 do
            local node = nodes[rank + 1] or ""
            if node_of[node] == nil then node_of[node] = count; count = count + 1 end
            local_rank[rank] = local_size[node] or 0
            local_size[node] = (local_size[node] or 0) + 1
            node_rank[rank] = node_of[node]
        end
        local workers = {}
        for rank = 0, req.num_workers - 1 do
            local argv = {"python3", req.model_main}
            for _, arg in ipairs(req.args) do argv[#argv + 1] = arg end
            local env = {
                RANK = tostring(rank),
                WORLD_SIZE = tostring(req.num_workers),
                LOCAL_RANK = tostring(local_rank[rank]),
                LOCAL_WORLD_SIZE = tostring(local_size[nodes[rank + 1] or ""]),
                NODE_RANK = tostring(node_rank[rank]),
            }
            -- torch.distributed's env:// rendezvous
            if req.master_addr then env.MASTER_ADDR = req.master_addr end
            if req.master_port and req.master_port > 0 then
                env.MASTER_PORT = tostring(req.master_port)
            end
            workers[#workers + 1] = {argv = argv, env = env}
        end
        return workers
    end,
}
