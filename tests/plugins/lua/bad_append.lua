loom.register_logger{
    name = "escaper",
    on_train_begin = function(info)
        loom.append("../x", "escaped\n")
    end,
}
