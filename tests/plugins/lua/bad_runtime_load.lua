local settings = nil
local port = settings.port
