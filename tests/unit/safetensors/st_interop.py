#!/usr/bin/env python3
"""PyTorch <-> loom safetensors interoperability.

Reads a file loom's C writer made with nothing but struct, json and
torch.frombuffer, and has PyTorch write files (laid out the way the
safetensors library lays them out, and a sloppier unpadded variant) that
loom's C reader must validate and return byte for byte.

usage: st_interop.py ST_INTEROP_TOOL
Exits 77 (ctest SKIP_RETURN_CODE) when torch cannot be imported.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError as exc:
    print(f"SKIP: PyTorch is not importable by {sys.executable} ({exc})")
    sys.exit(77)

TOOL = sys.argv[1]
FAILURES = []

DTYPES = {
    "F32": torch.float32, "F64": torch.float64, "I32": torch.int32,
    "I64": torch.int64, "U8": torch.uint8, "I8": torch.int8,
    "I16": torch.int16, "F16": torch.float16, "BF16": torch.bfloat16,
    "BOOL": torch.bool,
}
NAMES = {v: k for k, v in DTYPES.items()}


def check(cond, what):
    if cond:
        print(f"ok: {what}")
    else:
        print(f"FAIL: {what}")
        FAILURES.append(what)


def raw_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def read_file(path):
    """A safetensors reader in a dozen lines: header, then frombuffer."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors, spans = {}, []
    for name, e in header.items():
        b, end = e["data_offsets"]
        spans.append((b, end))
        dt = DTYPES[e["dtype"]]
        if end > b:
            t = torch.frombuffer(bytearray(data[b:end]), dtype=dt).reshape(e["shape"])
        else:
            t = torch.empty(e["shape"], dtype=dt)
        tensors[name] = t
    return n, meta, tensors, sorted(spans), len(data)


def write_file(path, tensors, meta, layout="library"):
    """Writes like safetensors.torch.save_file: largest elements first, then
    name; header padded with spaces to 8 bytes. layout="sloppy": name order,
    no padding (still valid, but data not aligned)."""
    if layout == "library":
        order = sorted(tensors, key=lambda k: (-tensors[k].element_size(), k))
    else:
        order = sorted(tensors)
    header, blobs, pos = {}, [], 0
    if meta:
        header["__metadata__"] = meta
    for name in order:
        t = tensors[name]
        blob = raw_bytes(t)
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [pos, pos + len(blob)]}
        blobs.append(blob)
        pos += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if layout == "library":
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def dump(path):
    p = subprocess.run([TOOL, "dump", path], capture_output=True, text=True)
    tensors, meta = {}, {}
    for line in p.stdout.splitlines():
        parts = line.split(" ")
        if parts[0] == "tensor":
            _, name, dtype, dims, hexbytes = parts
            shape = [] if dims == "-" else [int(d) for d in dims.split(",")]
            tensors[name] = (dtype, shape, b"" if hexbytes == "-" else bytes.fromhex(hexbytes))
        elif parts[0] == "meta":
            meta[parts[1]] = " ".join(parts[2:])
    return p.returncode, p.stderr, tensors, meta


def c_to_torch(work):
    path = os.path.join(work, "from_c.safetensors")
    r = subprocess.run([TOOL, "write", path], capture_output=True, text=True)
    check(r.returncode == 0, f"C writer ran ({r.stderr.strip()})")
    n, meta, got, spans, data_len = read_file(path)
    check(n % 8 == 0, "header padded to 8 bytes")
    check(meta == {"format": "pt", "epoch": "7"}, f"metadata read by Python: {meta}")
    pos = 0
    for b, e in spans:
        check(b == pos, f"span [{b}, {e}] starts where the previous ended")
        pos = e
    check(pos == data_len, "tensors cover the whole data section")
    want = {
        "layer.weight": torch.tensor([[0.5, -1.25, 3.0], [1e-30, -0.0, 65504.0]], dtype=torch.float32),
        "layer.bias": torch.tensor([0.1, -2.5, 1e300], dtype=torch.float64),
        "counts": torch.tensor([[-1, 0], [2147483647, -2147483648]], dtype=torch.int32),
        "ids": torch.tensor([-9007199254740993, 0, 9223372036854775807], dtype=torch.int64),
        "bytes": torch.tensor([0, 1, 127, 128, 255], dtype=torch.uint8),
        "empty": torch.empty((0, 4), dtype=torch.float32),
        "step": torch.tensor(9223372036854775807, dtype=torch.int64),
    }
    check(sorted(got) == sorted(want), f"tensor names: {sorted(got)}")
    for name, w in want.items():
        g = got.get(name)
        same = g is not None and g.dtype == w.dtype and list(g.shape) == list(w.shape) \
            and raw_bytes(g) == raw_bytes(w)
        check(same, f"C-written '{name}' equals PyTorch's {list(w.shape)} {w.dtype}")
    # Alignment the way the safetensors library expects it.
    with open(path, "rb") as f:
        raw = f.read()
    header = json.loads(raw[8:8 + n])
    for name, e in header.items():
        if name != "__metadata__":
            size = torch.empty((), dtype=DTYPES[e["dtype"]]).element_size()
            check((8 + n + e["data_offsets"][0]) % size == 0, f"'{name}' aligned to {size} in the file")


def torch_to_c(work):
    torch.manual_seed(1234)
    tensors = {
        "model.fc1.weight": torch.randn(4, 5),
        "model.fc1.bias": torch.randn(5, dtype=torch.float64),
        "optimizer.step": torch.tensor(12345, dtype=torch.int64),
        "idx": torch.arange(-3, 3, dtype=torch.int32),
        "pixels": torch.randint(0, 256, (2, 3), dtype=torch.uint8),
        "half": torch.randn(3).to(torch.bfloat16),
        "flags": torch.tensor([True, False, True]),
        "zero": torch.empty(0, 2),
    }
    meta = {"framework": "pytorch", "torch": torch.__version__}
    for layout in ("library", "sloppy"):
        path = os.path.join(work, f"from_torch_{layout}.safetensors")
        write_file(path, tensors, meta, layout)
        rc, err, got, got_meta = dump(path)
        check(rc == 0, f"C reader accepts the PyTorch file ({layout}) {err.strip()}")
        check(got_meta == meta, f"metadata read by C ({layout}): {got_meta}")
        check(list(got) == sorted(tensors), f"C lists tensors in name order ({layout})")
        for name, t in tensors.items():
            g = got.get(name)
            same = g is not None and g[0] == NAMES[t.dtype] and g[1] == list(t.shape) \
                and g[2] == raw_bytes(t)
            check(same, f"PyTorch-written '{name}' read by C byte for byte ({layout})")

    # A PyTorch file with a wrong size must be refused by name.
    path = os.path.join(work, "bad.safetensors")
    blob = raw_bytes(torch.randn(4))
    text = json.dumps({"w": {"dtype": "F32", "shape": [4, 5], "data_offsets": [0, 16]}}).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)
    rc, err, _, _ = dump(path)
    check(rc == 1 and "tensor 'w': data_offsets [0, 16] hold 16 bytes, F32 [4, 5] needs 80" in err,
          f"C refuses a bad PyTorch file: {err.strip()}")


def main():
    work = tempfile.mkdtemp(prefix="loom-st-interop-")
    try:
        print(f"torch {torch.__version__} from {sys.executable}")
        c_to_torch(work)
        torch_to_c(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
