-- Reaches the memory cap inside pcall, then fails with words of its own:
-- the cap is still why it failed.
pcall(function()
    local hoard = {}
    local i = 0
    while true do
        i = i + 1
        hoard[i] = string.rep("0123456789abcdef", 4096) .. i
    end
end)
collectgarbage()
error("gave up building the table")
