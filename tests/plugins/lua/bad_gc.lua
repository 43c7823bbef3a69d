-- a finalizer runs with hooks off: it would spin past any deadline
setmetatable({}, {__gc = function() while true do end end})
loom.register_logger{name = "finalizer"}
