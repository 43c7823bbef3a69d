loom.register_logger{name = "no spaces/allowed"}
