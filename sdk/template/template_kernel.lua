-- template_kernel.lua - an inference kernel in Lua: answers each request
-- with {"echo": <its body>, "model": <model.json's "name">}.
local model_name = "?"

loom.register_kernel{
    name = "lua_template_kernel",
    version = "0.1.0",
    description = "Echoes each request (Lua template)",
    load = function(model_dir, model, weight_path)
        model_name = model.name or model_dir
    end,
    execute = function(requests)
        local responses = {}
        for i, r in ipairs(requests) do
            responses[i] = {status = 0, content_type = "application/json",
                            body = {echo = r.body, model = model_name}}
        end
        return responses
    end,
}
