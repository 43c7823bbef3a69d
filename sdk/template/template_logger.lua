-- template_logger.lua - a logger in Lua: appends one line per callback to
-- lua_template.log in its own folder (plugin_dir), and reports where that is.
local role = "?"

local function line(text)
    loom.append("lua_template.log", role .. " " .. text .. "\n")
end

loom.register_logger{
    name = "lua_template_logger",
    version = "0.1.0",
    description = "One line per callback into its own folder (Lua template)",
    init = function(c)
        role = c.role .. "/" .. c.rank
        loom.log("info", "lua_template_logger: results in " .. tostring(c.result_dir) ..
                 ", own folder " .. tostring(c.plugin_dir))
    end,
    on_train_begin = function(info)
        line("begin epochs=" .. info.epochs .. " workers=" .. info.workers)
    end,
    log_train_metrics = function(metrics, iteration, epoch, workers)
        line("train iteration=" .. iteration .. " loss=" .. tostring(metrics.loss))
    end,
    log_test_metrics = function(metrics, iteration, epoch)
        line("test epoch=" .. epoch .. " " .. loom.json_encode(metrics))
    end,
    on_train_end = function(status, message)
        line("end " .. status)
    end,
}
