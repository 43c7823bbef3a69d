-- template_kernel.lua - an inference kernel in Lua: answers a raw model's
-- request with {"echo": <its body>, "model": <model.json's "name">}, and a
-- v2 model's (model.json declares "inputs"; the host decodes the request
-- into r.inputs) with its first input as the first declared output
-- (share/loom/doc/inference-protocol.md).
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
            if r.inputs then
                local x = r.inputs[1]
                responses[i] = {outputs = {{datatype = x.datatype, shape = x.shape,
                                            data = x.data}}}
            else
                responses[i] = {status = 0, content_type = "application/json",
                                body = {echo = r.body, model = model_name}}
            end
        end
        return responses
    end,
}
