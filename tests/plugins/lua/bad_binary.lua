local bytes = string.dump(function() return 1 end)
local chunk = assert(load(bytes, "dumped", "b"))
