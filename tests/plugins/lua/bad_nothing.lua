-- runs fine but registers nothing
local x = 1 + 1
