#!/usr/bin/env python3
"""make_corpus.py - writes the seed corpora of the fuzz targets
(tests/fuzz/<target>/corpus/): a handful of small valid inputs and near
misses per parser. The seeds are committed; run this again only to change
them (it rewrites the files it names and leaves others alone).

    python3 tests/fuzz/make_corpus.py
"""
import gzip
import io
import json
import os
import struct
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))


def put(target, name, data):
    folder = os.path.join(HERE, target, "corpus")
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def gz(data):
    # mtime=0 keeps the seeds byte-identical from run to run.
    return gzip.compress(data, mtime=0)


# ---- dlicmd: argument strings -------------------------------------------
DLICMD = {
    "edt": "--exec-start edt --model-dir fmnist-mlp --numWorker 4 --workerDeviceNum 1 "
           "--msd-env EDT_PULL_WEIGHT_TIME_OUT=30 --msd-env EDT_PULL_FAILED_LIMITS=3 "
           "-- --epochs 5 --batchsize 64",
    "edt_pytorch": "--exec-start edtPyTorch --model-dir pytorch-fmnist --model-main "
                   "pytorch_fmnist_edt.py --numWorker 2 -- --epochs 3",
    "command": "--exec-start command --model-dir scripts --model-main train.sh --msd-env SEED=1",
    "distpytorch": "--exec-start distPyTorch --model-dir ddp --model-main ddp_train.py "
                   "--numWorker 2 --workerDeviceType cpu",
    "equals": "--exec-start=edt --numWorker=2 --msd-priority=-5 --syncMode=SYNC "
              "--consumer=team-a --data-dir=/data/fmnist",
    "quotes": "--exec-start command --model-main 'train it.sh' -- \"a \\\"b\\\" c\" 'it'\\''s' x\\ y",
    "unterminated": "--exec-start edt -- 'open",
    "bad_number": "--exec-start edt --numWorker 0 --workerDeviceNum 65",
    "unknown_flag": "--exec-start edt --frobnicate yes",
    "twice": "--exec-start a --exec-start b",
    "gpu_async": "--exec-start edt --workerDeviceType gpu --syncMode ASYNC --queue-if-too-large true",
}
for name, text in DLICMD.items():
    put("dlicmd", name, text)

# ---- ffi_sig: libffi signature strings ----------------------------------
FFI_SIG = {
    "scale_add": "int32(ptr f32 in x, i64 n, ptr f32 out y)",
    "void_noargs": "void()",
    "inout": "void(ptr f64 inout data, u32 len)",
    "aliases": "int64(ptr double in a, int32 n, ptr float out b)",
    "unnamed": "u8(i8, u16, i32, u64, f32, f64)",
    "sixteen": "i32(" + ", ".join("i32 a%d" % i for i in range(16)) + ")",
    "seventeen": "i32(" + ", ".join("i32" for _ in range(17)) + ")",
    "ptr_return": "ptr f32 (i32 n)",
    "ptr_void": "i32(ptr void in p)",
    "dup_name": "i32(i32 n, i64 n)",
    "unbalanced": "i32(ptr u8 in buf, i64 n",
    "long_name": "i32(i32 " + "x" * 40 + ")",
}
for name, text in FFI_SIG.items():
    put("ffi_sig", name, text)

# ---- json_body: REST bodies, exec submission + training spec ------------
JSON_BODY = {
    "submit": {"args": "--exec-start edt --model-dir fmnist-mlp --numWorker 2 -- --epochs 2"},
    "submit_spec": {
        "args": "--exec-start edt --numWorker 4 --msd-env EDT_PULL_WEIGHT_TIME_OUT=30 "
                "--msd-env LOOM_EDT_STEP_TIMEOUT_MS=5000 -- --batch-size 32",
        "training": {"epochs": 3, "batch_size": 64, "engines_number": 2,
                     "effective_batch_size": 256, "validation_freq": 1,
                     "checkpoint_freq": 2, "num_dataloader_threads": 2, "seed": 7,
                     "loggers": [{"name": "jsonl", "role": "both", "config": {}}]},
    },
    "args_flags": {"args": "--exec-start edt -- --epochs=4 --seed 9 --effective-batch-size 128 "
                           "--engines 3 --log-every 10"},
    "bad_multiple": {"args": "--exec-start edt", "training": {"batch_size": 48,
                                                              "effective_batch_size": 100}},
    "bad_training": {"args": "--exec-start edt", "training": [1, 2, 3]},
}
# (json_body also holds wmla-*.json: WMLA's tuning task and profile examples,
# copied in as they are, for the parsers that will read those bodies.)
for name, obj in JSON_BODY.items():
    put("json_body", name + ".json", json.dumps(obj))
put("json_body", "array.json", "[1, 2, 3]")
put("json_body", "deep.json", "{\"a\":" + "[" * 70 + "]" * 70 + "}")
put("json_body", "trailing.json", "{\"args\": \"--exec-start edt\"} x")
put("json_body", "string_escapes.json", "{\"args\": \"--exec-start \\u0065dt -- --epochs \\\"2\\\"\"}")

# ---- model_json: the ffi kernel's model.json ----------------------------
FFI = {"library": "libvecmath.so", "symbol": "scale_add",
       "signature": "int32(ptr f32 in x, i64 n, ptr f32 out y)", "output_size": "n"}
MODEL_JSON = {
    "scale_add": {"name": "vecmath", "runtime": "ffi", "ffi": FFI},
    "output_number": {"runtime": "ffi", "ffi": dict(FFI, output_size=4)},
    "inout": {"runtime": "ffi", "ffi": dict(FFI, signature="void(ptr f64 inout v, u32 n)")},
    "absolute_library": {"runtime": "ffi", "ffi": dict(FFI, library="/usr/lib/libm.so.6")},
    "dotdot_library": {"runtime": "ffi", "ffi": dict(FFI, library="../lib/libvecmath.so")},
    "float_return": {"runtime": "ffi", "ffi": dict(FFI, signature="f32(ptr f32 in x, ptr f32 out y)")},
    "two_in": {"runtime": "ffi", "ffi": dict(FFI, signature="i32(ptr f32 in a, ptr f32 in b, ptr f32 out c)")},
    "bad_output_size": {"runtime": "ffi", "ffi": dict(FFI, output_size=-3)},
    "wmla_native": {"name": "fmnist-mlp", "tag": "v1", "runtime": "native",
                    "kernel_path": "kernel.so", "weight_path": "model.safetensors",
                    "schema_version": "1",
                    "attributes": [{"key": "input_shape", "value": "1,784"}],
                    "mk_environments": [{"name": "OPENBLAS_NUM_THREADS", "value": "1"}]},
    "no_ffi": {"runtime": "ffi"},
}
for name, obj in MODEL_JSON.items():
    put("model_json", name + ".json", json.dumps(obj, indent=1))
put("model_json", "not_object.json", "\"ffi\"")

# ---- idx: [2-byte images length][images][labels] -------------------------


def idx(dims, payload):
    return struct.pack(">BBBB", 0, 0, 8, len(dims)) + b"".join(
        struct.pack(">I", d) for d in dims) + bytes(payload)


def idx_pair(images, labels):
    return struct.pack(">H", len(images)) + images + labels


IMAGES = idx([3, 2, 2], range(0, 240, 20))
LABELS = idx([3], [0, 2, 1])
put("idx", "valid", idx_pair(IMAGES, LABELS))
put("idx", "valid_gzip", idx_pair(gz(IMAGES), gz(LABELS)))
put("idx", "valid_4d", idx_pair(idx([2, 3, 1, 2], range(12)), idx([2], [9, 4])))
put("idx", "truncated_data", idx_pair(IMAGES[:-3], LABELS))
put("idx", "count_mismatch", idx_pair(IMAGES, idx([2], [0, 1])))
put("idx", "bad_magic", idx_pair(b"\x00\x00\x0d\x03" + IMAGES[4:], LABELS))
put("idx", "huge_dims", idx_pair(idx([1, 70000, 2], b""), LABELS))

# ---- csv: [options byte][file] -------------------------------------------
TINY = ("label,p0,p1,p2,p3\n0,255,200,10,0\n1,0,250,240,5\n2,3,10,220,255\n"
        "0,240,180,30,12\n")
put("csv", "pixels_header", b"\x04" + TINY.encode())
put("csv", "pixels_gzip", b"\x04" + gz(TINY.encode()))
put("csv", "unit_label_last", b"\x02" + b"0.5,0.25,1\n0,1,3\r\n\n1,0.75,0\n")
put("csv", "label_second", b"\x01" + b"0.1,4,0.2\n0.3,5,0.4\n")
put("csv", "ragged", b"\x00" + b"1,0.5,0.5\n2,0.5\n")
put("csv", "out_of_range", b"\x00" + b"1,0.5,1.5\n")
put("csv", "bad_label", b"\x00" + b"1.5,0.5\n-1,0.2\n")
put("csv", "column_5_short", b"\x03" + b"1,2,3\n")

# ---- tar: model-directory archives ---------------------------------------


def tar(entries, compress=False):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, value in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if kind == "file":
                info.size = len(value)
                info.mode = 0o644
                t.addfile(info, io.BytesIO(value))
            elif kind == "dir":
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                t.addfile(info)
            elif kind == "symlink":
                info.type = tarfile.SYMTYPE
                info.linkname = value
                t.addfile(info)
            elif kind == "hardlink":
                info.type = tarfile.LNKTYPE
                info.linkname = value
                t.addfile(info)
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
                t.addfile(info)
    data = buf.getvalue().rstrip(b"\0")
    # Keep the end-of-archive blocks but not the record padding.
    data += b"\0" * (1024 + (-len(data)) % 512)
    return gz(data) if compress else data


SPEC = b'{"training": {"epochs": 2}}\n'
put("tar", "model_dir.tar", tar([("edt.json", "file", SPEC), ("code", "dir", None),
                                 ("code/train.py", "file", b"print('hi')\n")]))
put("tar", "model_dir.tar.gz", tar([("edt.json", "file", SPEC)], compress=True))
put("tar", "symlink_inside.tar", tar([("data", "dir", None), ("data/x", "file", b"1"),
                                      ("link", "symlink", "data/x")]))
put("tar", "dotdot.tar", tar([("../escape", "file", b"x")]))
put("tar", "absolute.tar", tar([("/tmp/escape", "file", b"x")]))
put("tar", "symlink_out.tar", tar([("a/b", "symlink", "../../etc")]))
put("tar", "hardlink.tar", tar([("f", "file", b"x"), ("g", "hardlink", "f")]))
put("tar", "fifo.tar", tar([("p", "fifo", None)]))
put("tar", "write_through_link.tar", tar([("d", "symlink", "."), ("d/f", "file", b"x")]))

# ---- native_spec: the native adapter's model JSON ------------------------
NATIVE = {
    "model": {"input": [1, 28, 28], "layers": [
        {"type": "conv2d", "filters": 8, "kernel": 3, "padding": 1}, {"type": "relu"},
        {"type": "max_pool2d", "kernel": 2}, {"type": "flatten"},
        {"type": "dense", "units": 64}, {"type": "relu"},
        {"type": "dropout", "rate": 0.2}, {"type": "dense", "units": 10}]},
    "loss": "softmax_cross_entropy",
    "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
    "lr_schedule": {"type": "step", "step_size": 5, "gamma": 0.5},
    "dataset": {"format": "idx", "train_images": "train-images-idx3-ubyte.gz",
                "train_labels": "train-labels-idx1-ubyte.gz"},
    "init_seed": 1,
}
put("native_spec", "conv.json", json.dumps(NATIVE))
put("native_spec", "mlp_adam_cosine.json", json.dumps({
    "model": {"layers": [{"type": "dense", "units": 512}, {"type": "relu"},
                         {"type": "dense", "units": 10}]},
    "optimizer": {"type": "adam", "lr": 0.001, "weight_decay": 0.0001},
    "lr_schedule": {"type": "cosine", "min_lr": 0.0001},
    "dataset": {"format": "csv", "train": "train.csv", "label_column": 0, "scale": 0.00392}}))
put("native_spec", "unknown_field.json", json.dumps({
    "model": {"layers": [{"type": "dense", "unit": 10}]}, "optimizer": {"type": "sgd", "lr": 0.1}}))
put("native_spec", "bad_rate.json", json.dumps({
    "model": {"layers": [{"type": "dropout", "rate": 1}]}, "optimizer": {"type": "sgd", "lr": 0.1}}))
put("native_spec", "empty_layers.json", json.dumps({"model": {"layers": []}}))
