local def = {name = "twice", suggest = function() end, observe = function() end}
loom.register_search(def)
loom.register_search(def)
