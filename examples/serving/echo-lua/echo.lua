-- echo.lua - a kernel in Lua with WMLA's names: on_kernel_start once per
-- instance's model, on_task_invoke over each batch (an array of requests,
-- answered in order), on_kernel_shutdown when the service stops.
local started = false

loom.register_kernel{
    name = "echo-lua",
    on_kernel_start = function(model_dir, model, weight_path)
        started = true
    end,
    on_task_invoke = function(tasks)
        local out = {}
        for i, task in ipairs(tasks) do
            out[i] = {status = 0, body = task.body, content_type = "application/json"}
        end
        return out
    end,
    on_kernel_shutdown = function()
        started = false
    end,
}
