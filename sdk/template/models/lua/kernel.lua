-- kernel.lua - the kernel of the template-lua model directory, in Lua with
-- WMLA's names (loom's own, load/execute, work the same). It reads its
-- greeting from model.json's attributes when an instance starts and
-- answers each request with {"greeting": ..., "echo": <the request's body>}.
-- The script runs sandboxed: no io, os or require (share/loom/lua/REFERENCE.md).
local greeting = "hello"

loom.register_kernel{
    name = "template-lua",
    version = "0.1.0",
    description = "Template model: greets and echoes (Lua)",
    on_kernel_start = function(model_dir, model, weight_path)
        for _, a in ipairs(model.attributes or {}) do
            if a.key == "greeting" then greeting = a.value end
        end
    end,
    on_task_invoke = function(tasks)  -- the batch, answered in order
        local out = {}
        for i, t in ipairs(tasks) do
            out[i] = {status = 0, content_type = "application/json",
                      body = {greeting = greeting, echo = t.body}}
        end
        return out
    end,
    on_kernel_shutdown = function() end,
}
