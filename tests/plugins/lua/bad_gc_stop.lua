collectgarbage("stop")
loom.register_logger{name = "no-collector"}
