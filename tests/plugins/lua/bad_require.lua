local ffi = require("ffi")
