-- A kernel that scales numbers: {"x": n} -> {"y": n * scale}, with scale
-- read from model.json at load.
local scale

loom.register_kernel{
    name = "scale",
    load = function(model_dir, model)
        assert(type(model_dir) == "string")
        scale = model.scale
    end,
    execute = function(requests)
        local responses = {}
        for i, r in ipairs(requests) do
            local input, err = loom.json_decode(r.body)
            if not input or type(input.x) ~= "number" then
                responses[i] = {status = 1, body = "expected {\"x\": number}: " .. tostring(err)}
            else
                responses[i] = {status = 0, body = {y = input.x * scale, id = r.id}}
            end
        end
        return responses
    end,
}
