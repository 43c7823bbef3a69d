-- line 1
local ok = true
local x = = 3
