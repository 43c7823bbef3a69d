-- A kernel with neither execute nor on_task_invoke: refused at load.
loom.register_kernel{name = "idle", on_kernel_start = function() end}
