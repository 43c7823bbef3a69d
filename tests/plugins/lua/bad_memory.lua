local hoard = {}
local i = 0
while true do
    i = i + 1
    hoard[i] = string.rep("0123456789abcdef", 4096) .. i
end
