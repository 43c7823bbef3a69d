/*
 * tests/plugins/old_abi/layout_dump.c - prints the offset and size of every
 * field of ABI 1.0. Built once against the frozen 1.0 headers and once
 * against sdk/include: the outputs must match, so a 1.0 field never moves.
 * (Generated from tests/abi-1.0/include by listing each struct's fields.)
 */
#include <loom/loom.h>
#include <stdio.h>

#define FIELD(type, field) \
    printf("%s.%s %zu %zu\n", #type, #field, offsetof(struct type, field), \
           sizeof(((struct type *)0)->field))

/* The core: metrics, devices, tensors, the host table and the module */
static void dump_core(void)
{
    FIELD(loom_metric, name);
    FIELD(loom_metric, value);
    FIELD(loom_metrics, struct_size);
    FIELD(loom_metrics, count);
    FIELD(loom_metrics, items);
    FIELD(loom_device, struct_size);
    FIELD(loom_device, kind);
    FIELD(loom_device, index);
    FIELD(loom_device, reserved);
    FIELD(loom_tensor_view, struct_size);
    FIELD(loom_tensor_view, dtype);
    FIELD(loom_tensor_view, ndim);
    FIELD(loom_tensor_view, on_device);
    FIELD(loom_tensor_view, shape);
    FIELD(loom_tensor_view, name);
    FIELD(loom_tensor_view, data);
    FIELD(loom_tensor_view, nbytes);
    FIELD(loom_host, struct_size);
    FIELD(loom_host, abi_major);
    FIELD(loom_host, abi_minor);
    FIELD(loom_host, host_version);
    FIELD(loom_host, host_data);
    FIELD(loom_host, log);
    FIELD(loom_host, error_new);
    FIELD(loom_host, error_newf);
    FIELD(loom_host, error_code);
    FIELD(loom_host, error_message);
    FIELD(loom_host, error_free);
    FIELD(loom_host, alloc);
    FIELD(loom_host, realloc);
    FIELD(loom_host, free);
    FIELD(loom_host, clock_ns);
    FIELD(loom_host, get_extension);
    FIELD(loom_module, struct_size);
    FIELD(loom_module, abi_major);
    FIELD(loom_module, abi_minor);
    FIELD(loom_module, abi_tag);
    FIELD(loom_module, id);
    FIELD(loom_module, version);
    FIELD(loom_module, description);
    FIELD(loom_module, init);
    FIELD(loom_module, deinit);
    FIELD(loom_module, get_factory);
}

/* Framework adapters */
static void dump_framework(void)
{
    FIELD(loom_launch_request, struct_size);
    FIELD(loom_launch_request, num_workers);
    FIELD(loom_launch_request, worker_device_num);
    FIELD(loom_launch_request, master_port);
    FIELD(loom_launch_request, exec_id);
    FIELD(loom_launch_request, code_dir);
    FIELD(loom_launch_request, model_main);
    FIELD(loom_launch_request, data_dir);
    FIELD(loom_launch_request, result_dir);
    FIELD(loom_launch_request, log_dir);
    FIELD(loom_launch_request, device_type);
    FIELD(loom_launch_request, master_addr);
    FIELD(loom_launch_request, args);
    FIELD(loom_launch_request, arg_count);
    FIELD(loom_launch_request, msd_env_count);
    FIELD(loom_launch_request, msd_env);
    FIELD(loom_launch_sink, struct_size);
    FIELD(loom_launch_sink, host_data);
    FIELD(loom_launch_sink, add_worker);
    FIELD(loom_trainer_config, struct_size);
    FIELD(loom_trainer_config, rank);
    FIELD(loom_trainer_config, num_dataloader_threads);
    FIELD(loom_trainer_config, reserved);
    FIELD(loom_trainer_config, seed);
    FIELD(loom_trainer_config, device);
    FIELD(loom_trainer_config, spec_json);
    FIELD(loom_trainer_config, code_dir);
    FIELD(loom_trainer_config, data_dir);
    FIELD(loom_step_info, struct_size);
    FIELD(loom_step_info, epoch);
    FIELD(loom_step_info, epochs);
    FIELD(loom_step_info, reserved);
    FIELD(loom_step_info, iteration);
    FIELD(loom_step_info, steps_per_epoch);
    FIELD(loom_framework_factory, struct_size);
    FIELD(loom_framework_factory, style);
    FIELD(loom_framework_factory, plan_launch);
    FIELD(loom_framework_factory, create);
    FIELD(loom_framework_factory, destroy);
    FIELD(loom_framework_factory, dataset_size);
    FIELD(loom_framework_factory, buffers);
    FIELD(loom_framework_factory, zero_grad);
    FIELD(loom_framework_factory, forward_backward);
    FIELD(loom_framework_factory, apply);
    FIELD(loom_framework_factory, evaluate);
    FIELD(loom_framework_factory, state_tensors);
    FIELD(loom_framework_factory, state_loaded);
}

/* Inference kernels and logger callbacks */
static void dump_kernel_and_logger(void)
{
    FIELD(loom_kernel_model_config, struct_size);
    FIELD(loom_kernel_model_config, reserved);
    FIELD(loom_kernel_model_config, model_dir);
    FIELD(loom_kernel_model_config, model_json);
    FIELD(loom_kernel_model_config, weight_path);
    FIELD(loom_infer_request, struct_size);
    FIELD(loom_infer_request, reserved);
    FIELD(loom_infer_request, id);
    FIELD(loom_infer_request, content_type);
    FIELD(loom_infer_request, body);
    FIELD(loom_infer_request, body_len);
    FIELD(loom_infer_request, host_data);
    FIELD(loom_infer_request, respond);
    FIELD(loom_kernel_factory, struct_size);
    FIELD(loom_kernel_factory, reserved);
    FIELD(loom_kernel_factory, load_model);
    FIELD(loom_kernel_factory, unload_model);
    FIELD(loom_kernel_factory, create_instance);
    FIELD(loom_kernel_factory, destroy_instance);
    FIELD(loom_kernel_factory, execute);
    FIELD(loom_logger_config, struct_size);
    FIELD(loom_logger_config, role);
    FIELD(loom_logger_config, rank);
    FIELD(loom_logger_config, reserved);
    FIELD(loom_logger_config, exec_id);
    FIELD(loom_logger_config, log_dir);
    FIELD(loom_logger_config, config_json);
    FIELD(loom_train_info, struct_size);
    FIELD(loom_train_info, epochs);
    FIELD(loom_train_info, workers);
    FIELD(loom_train_info, batch_size);
    FIELD(loom_train_info, effective_batch_size);
    FIELD(loom_train_info, reserved);
    FIELD(loom_train_info, exec_id);
    FIELD(loom_logger_factory, struct_size);
    FIELD(loom_logger_factory, reserved);
    FIELD(loom_logger_factory, create);
    FIELD(loom_logger_factory, destroy);
    FIELD(loom_logger_factory, on_train_begin);
    FIELD(loom_logger_factory, log_train_metrics);
    FIELD(loom_logger_factory, log_test_metrics);
    FIELD(loom_logger_factory, on_train_end);
}

int main(void)
{
    dump_core();
    dump_framework();
    dump_kernel_and_logger();
    return 0;
}
