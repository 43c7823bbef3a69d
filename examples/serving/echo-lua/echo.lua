-- echo.lua - a kernel in Lua with WMLA's names: on_kernel_start once per
-- instance's model, on_task_invoke over each batch (an array of requests,
-- answered in order), on_kernel_shutdown when the service stops. A v2
-- model (echo-lua-v2: model.json declares its inputs) gets task.inputs,
-- decoded by the host, and answers them as its outputs (unnamed: they take
-- the declared names); a raw model (echo-lua) answers the body itself.
local started = false

loom.register_kernel{
    name = "echo-lua",
    on_kernel_start = function(model_dir, model, weight_path)
        started = true
    end,
    on_task_invoke = function(tasks)
        local out = {}
        for i, task in ipairs(tasks) do
            if task.inputs then
                local outputs = {}
                for k, t in ipairs(task.inputs) do
                    outputs[k] = {datatype = t.datatype, shape = t.shape, data = t.data}
                end
                out[i] = {outputs = outputs}
            else
                out[i] = {status = 0, body = task.body, content_type = "application/json"}
            end
        end
        return out
    end,
    on_kernel_shutdown = function()
        started = false
    end,
}
