# _loom: the Python half of the edtPyTorch adapter, compiled into
# edtPyTorch.so and run inside each `loom worker`. The C half calls these
# functions (always holding the GIL, from the worker's main thread); the
# user's script runs on a thread of its own until FabricModel.train() hands
# its model, datasets, loss and optimizer over, then waits there until the
# trainer is done with them.
import inspect
import math
import os
import runpy
import sys
import threading
import traceback

DTYPE_F32, DTYPE_F64, DTYPE_I32, DTYPE_I64, DTYPE_U8 = 1, 2, 3, 4, 5
ROLE_PARAMETER, ROLE_OPTIMIZER = 0, 1
EVAL_BATCH = 256


class AdapterError(Exception):
    """A problem with what the script handed over; the message says which."""


def format_exception(exc):
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


# ---- torchvision's datasets read DATA_DIR, never the network ----------------

def _no_download(path, source):
    raise FileNotFoundError(
        "edtPyTorch downloads nothing: torchvision looked for %s and did not find it (it would "
        "fetch %s); put the file there (DATA_DIR is %s)"
        % (path, source, os.environ.get("DATA_DIR", "unset")))


def _patch_torchvision_utils(utils):
    """Every torchvision download goes through download_url or
    download_file_from_google_drive: a file present is used as it is (its
    checksum is not the point when nothing would be fetched instead: Debian
    recompresses its copies), a missing one is an error naming it, at once,
    instead of a network fetch that hangs or fails far from its cause."""
    original = utils.download_url

    def download_url(url, root, filename=None, md5=None, max_redirect_hops=3):
        path = os.path.join(os.path.expanduser(root), filename or os.path.basename(url))
        if not os.path.isfile(path):
            _no_download(path, url)
        return original(url, root, filename, None, max_redirect_hops)

    def download_file_from_google_drive(file_id, root, filename=None, md5=None):
        path = os.path.join(os.path.expanduser(root), filename or file_id)
        if not os.path.isfile(path):
            _no_download(path, "Google Drive file %s" % file_id)

    utils.download_url = download_url
    utils.download_file_from_google_drive = download_file_from_google_drive


def _patch_torchvision_mnist(mnist):
    """MNIST and its kin look for their files in ROOT/CLASS/raw, and fail
    with "Dataset not found" (or, asked to download, on making that folder
    in a read-only DATA_DIR): name the files they need first."""
    original = mnist.MNIST.__init__

    def __init__(self, root, *args, **kwargs):
        folder = os.path.join(os.path.expanduser(str(root)), type(self).__name__)
        resources = getattr(type(self), "resources", None)  # [(url, md5)] for MNIST, FashionMNIST, KMNIST
        names = [os.path.basename(r[0]) for r in resources if isinstance(r, tuple)] \
            if isinstance(resources, list) else []
        raw = os.path.join(folder, "raw")
        missing = [os.path.join(raw, n[:-3] if n.endswith(".gz") else n) for n in names
                   if not os.path.exists(os.path.join(raw, n))
                   and not os.path.exists(os.path.join(raw, n[:-3] if n.endswith(".gz") else n))]
        if missing and not os.path.isdir(os.path.join(folder, "processed")):
            raise FileNotFoundError("%s: no %s (nor its .gz); torchvision reads these files from %s "
                                    "and edtPyTorch downloads nothing"
                                    % (type(self).__name__, ", ".join(missing), raw))
        original(self, root, *args, **kwargs)

    mnist.MNIST.__init__ = __init__


class _TorchvisionOffline:
    """An import hook: patches torchvision's download helpers as they load,
    before any dataset module takes its own reference to them."""
    PATCHES = {"torchvision.datasets.utils": _patch_torchvision_utils,
               "torchvision.datasets.mnist": _patch_torchvision_mnist}

    def find_spec(self, name, path, target=None):
        patch = self.PATCHES.get(name)
        if patch is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader_exec = spec.loader.exec_module

        def exec_module(module):
            loader_exec(module)
            patch(module)
        spec.loader.exec_module = exec_module
        return spec


# ---- the user's script on its own thread ----------------------------------

class _Script:
    def __init__(self):
        self.handed = threading.Event()   # train() was called, or the script ended
        self.release = threading.Event()  # the trainer is done: train() returns
        self.model = None
        self.completed = False  # train() returns only where training finished
        self.settings = None
        self.error = None
        self.thread = None


_script = _Script()


def handover(fabric_model, settings):
    """Called by FabricModel.train() on the script's thread."""
    if _script.model is not None:
        raise RuntimeError("FabricModel.train() called twice in one job")
    _script.model = fabric_model
    _script.settings = dict(settings)
    _script.handed.set()
    _script.release.wait()
    if not _script.completed:
        # This worker left before the end (a resize, or the job failed):
        # the rest of the script, which may save the model, is not its to run.
        raise SystemExit(0)


def _run(path, argv):
    try:
        sys.argv = [path] + list(argv)
        runpy.run_path(path, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0) and _script.model is None:
            _script.error = "the script exited with status %r before calling FabricModel.train()" % (exc.code,)
    except BaseException as exc:  # noqa: B902 - every failure goes to the log
        text = format_exception(exc)
        sys.stderr.write(text)
        sys.stderr.flush()
        if _script.model is None:
            _script.error = text
    finally:
        _script.handed.set()


def run_script(path, argv, seed):
    """Runs the script until it hands its model over; returns the settings
    FabricModel.train() was called with."""
    import torch
    torch.manual_seed(seed)  # the same initial weights on every worker
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(1)  # one worker per core, as with OpenBLAS
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    sys.meta_path.insert(0, _TorchvisionOffline())
    _script.thread = threading.Thread(target=_run, args=(path, argv), name="model-main", daemon=True)
    _script.thread.start()
    _script.handed.wait()
    if _script.error is not None:
        raise AdapterError(_script.error)
    if _script.model is None:
        raise AdapterError("the script %s ended without calling FabricModel.train()" % os.path.basename(path))
    return _script.settings


# ---- callbacks: both generations of WMLA's logger API ----------------------

def _positional_count(method):
    try:
        params = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return -1
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


class Callback:
    """Wraps a user's logger. The older generation logs
    log_train_metrics(loss, acc, completed_batch, worker=0) with accuracy in
    percent; the newer log_train_metrics(metrics, iteration, epoch, workers).
    Which one is told by the method's parameters: the old one takes a loss
    first and has a `worker` parameter or four positional ones."""

    def __init__(self, obj, worker):
        self.obj = obj
        self.worker = worker
        method = getattr(obj, "log_train_metrics", None)
        names = list(inspect.signature(method).parameters) if method else []
        self.old_style = ("loss" in names[:1] or "worker" in names) and "metrics" not in names

    def _call(self, name, *args):
        method = getattr(self.obj, name, None)
        if method is not None:
            method(*args)

    def begin(self):
        self._call("on_train_begin")

    def end(self):
        self._call("on_train_end")

    def train(self, metrics, iteration, epoch, workers):
        if self.old_style:
            acc = metrics.get("accuracy", 0.0) * 100.0
            self._call("log_train_metrics", metrics.get("loss", 0.0), acc, iteration, self.worker)
        else:
            self._call("log_train_metrics", dict(metrics), iteration, epoch, workers)

    def test(self, metrics, iteration, epoch):
        if self.old_style:
            acc = metrics.get("accuracy", 0.0) * 100.0
            self._call("log_test_metrics", metrics.get("loss", 0.0), acc, iteration, self.worker)
        else:
            self._call("log_test_metrics", dict(metrics), iteration, epoch)


# ---- the trainer's side ----------------------------------------------------

def _is_dataset(obj):
    return hasattr(obj, "__getitem__") and hasattr(obj, "__len__")


def _dtype_code(t):
    import torch
    codes = {torch.float32: DTYPE_F32, torch.float64: DTYPE_F64, torch.int32: DTYPE_I32,
             torch.int64: DTYPE_I64, torch.uint8: DTYPE_U8}
    return codes.get(t.dtype)


class Trainer:
    def __init__(self, rank):
        import torch
        self.torch = torch
        self.rank = rank
        fm = _script.model
        self.fm = fm
        self.model = fm.model
        self.loss_fn = fm.loss_function
        self.optimizer = fm.optimizer
        self.metrics = list(fm.metrics or [])
        self.collate = fm.fn_batch_collate
        if self.collate is None:
            from torch.utils.data import default_collate
            self.collate = default_collate
        if not isinstance(self.model, torch.nn.Module):
            raise AdapterError("FabricModel: model is a %s, expected a torch.nn.Module" % type(self.model).__name__)
        if not callable(self.loss_fn):
            raise AdapterError("FabricModel: loss_function is not callable")
        for m in self.metrics:
            if not callable(m):
                raise AdapterError("FabricModel: metrics: %r is not a callable (output, target) -> float" % (m,))
        self.metric_names = [getattr(m, "__name__", "metric%d" % i) for i, m in enumerate(self.metrics)]
        self._load_datasets()
        self._check_parameters()
        self.workers = 1
        self.test_rounds = {}
        self.iteration = 0
        self.epoch = 0
        self.completed = False
        self.callbacks = [Callback(c, rank) for c in (fm.worker_callback,) if c is not None]
        self.driver = None
        if fm.driver_callback is not None and self._elect("driver-callback"):
            self.driver = Callback(fm.driver_callback, 0)

    def _load_datasets(self):
        got = self.fm.get_dataset()
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            raise AdapterError("get_dataset() returned %s; expected two datasets (train, test)"
                               % (type(got).__name__ if not isinstance(got, (tuple, list))
                                  else "%d values" % len(got)))
        for name, ds in zip(("train", "test"), got):
            if not _is_dataset(ds):
                raise AdapterError("get_dataset(): the %s dataset is a %s, expected a map-style dataset "
                                   "(with __len__ and __getitem__)" % (name, type(ds).__name__))
        self.train_ds, self.test_ds = got
        if len(self.train_ds) == 0:
            raise AdapterError("get_dataset(): the training dataset is empty")

    def _check_parameters(self):
        named = [(n, p) for n, p in self.model.named_parameters() if p.requires_grad]
        if not named:
            raise AdapterError("the model has no parameters that require a gradient: nothing to train")
        for n, p in named:
            if p.dtype != self.torch.float32:
                raise AdapterError("parameter %s is %s; edtPyTorch trains float32 parameters" % (n, p.dtype))
            if p.device.type != "cpu":
                raise AdapterError("parameter %s is on %s; this worker trains on the CPU" % (n, p.device))
        held = {id(p) for g in self.optimizer.param_groups for p in g["params"]} \
            if hasattr(self.optimizer, "param_groups") else None
        if held is None:
            raise AdapterError("FabricModel: optimizer is a %s, expected a torch.optim.Optimizer"
                               % type(self.optimizer).__name__)
        missing = [n for n, p in named if id(p) not in held]
        if missing:
            raise AdapterError("the optimizer does not hold the model's parameters (%s%s): build it from "
                               "model.parameters()" % (", ".join(missing[:3]), ", ..." if len(missing) > 3 else ""))
        ours = {id(p) for _, p in named}
        if any(i not in ours for i in held):
            raise AdapterError("the optimizer holds parameters that are not the model's trainable ones")
        self.named = named
        self.count = sum(p.numel() for _, p in named)

    def _elect(self, what):
        """True in the one process of the job that takes on `what`."""
        folder = os.path.join(os.environ.get("RESULT_DIR", "."), "log")
        try:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(os.path.join(folder, ".edtPyTorch-" + what), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except OSError:
            return False
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True

    # Called by C once the flat buffers exist.
    def bind(self, params_view, grads_view):
        torch = self.torch
        flat = torch.frombuffer(params_view, dtype=torch.float32)
        gflat = torch.frombuffer(grads_view, dtype=torch.float32)
        offset = 0
        with torch.no_grad():
            for _, p in self.named:
                n = p.numel()
                flat[offset:offset + n].copy_(p.detach().reshape(-1))
                p.data = flat[offset:offset + n].view_as(p)
                p.grad = gflat[offset:offset + n].view_as(p)
                offset += n
        self.flat, self.gflat = flat, gflat
        self._init_optimizer_state()
        for cb in self.callbacks:
            cb.begin()
        if self.driver:
            self.driver.begin()

    def _init_optimizer_state(self):
        """Creates the optimizer's state now (most optimizers make it at the
        first step) so its tensors can be checkpointed and sent to joining
        workers from the start: a step on zero gradients, then the
        parameters and the state that existed before are put back and the
        new state is zeroed, which is what the first real step starts from."""
        torch = self.torch
        with torch.no_grad():
            saved = self.flat.clone()
            before = {}
            for p, st in self.optimizer.state.items():
                before[id(p)] = {k: v.clone() for k, v in st.items() if torch.is_tensor(v)}
            self.gflat.zero_()
            self.optimizer.step()
            self.flat.copy_(saved)
            for p, st in self.optimizer.state.items():
                old = before.get(id(p), {})
                for k, v in st.items():
                    if torch.is_tensor(v):
                        if k in old:
                            v.copy_(old[k])
                        else:
                            v.zero_()

    def state_views(self):
        """(name, address, dtype, shape, nbytes, role) of every tensor needed to
        resume: the parameters (views into the flat buffer), the model's
        buffers (e.g. batch-norm statistics), the optimizer's state."""
        out = []
        torch = self.torch

        def add(name, t, role):
            code = _dtype_code(t)
            if code is None or not t.is_contiguous():
                raise AdapterError("%s: a %s %s tensor; edtPyTorch keeps contiguous float32/float64/int "
                                   "tensors" % (name, t.dtype, "non-contiguous" if code else ""))
            shape = list(t.shape) or [1]
            out.append((name, t.data_ptr(), code, shape, t.numel() * t.element_size(), role))

        for n, p in self.named:
            add(n, p.data, ROLE_PARAMETER)
        for n, b in self.model.named_buffers():
            if b is not None and b.device.type == "cpu":
                add(n, b, ROLE_PARAMETER)
        names = {id(p): n for n, p in self.named}
        for p, st in self.optimizer.state.items():
            for k, v in sorted(st.items()):
                if torch.is_tensor(v):
                    add("optim.%s.%s" % (k, names.get(id(p), "?")), v, ROLE_OPTIMIZER)
        return out

    def _batch(self, ds, indices):
        samples = [ds[i] for i in indices]  # Python ints already
        batch = self.collate(samples)
        if not isinstance(batch, (tuple, list)) or len(batch) < 2:
            raise AdapterError("a batch is a %s; the dataset's samples (or fn_batch_collate) must give "
                               "(input, target)" % type(batch).__name__)
        return batch[0], batch[1]

    def _metrics(self, output, target, loss):
        torch = self.torch
        m = {"loss": float(loss)}
        if output.dim() == 2 and target.dim() == 1 and not torch.is_floating_point(target):
            m["accuracy"] = float((output.argmax(1) == target).float().mean())
        for name, fn in zip(self.metric_names, self.metrics):
            m[name] = float(fn(output, target))
        return m

    def forward_backward(self, indices, scale):
        x, y = self._batch(self.train_ds, indices)
        if not self.model.training:  # evaluate() left it in eval mode
            self.model.train()
        out = self.model(x)
        loss = self.loss_fn(out, y)
        if not self.torch.is_tensor(loss) or loss.dim() != 0:
            raise AdapterError("the loss function returned %s; expected a scalar tensor (use a mean "
                               "reduction)" % (type(loss).__name__ if not self.torch.is_tensor(loss)
                                               else "a tensor of shape %s" % list(loss.shape)))
        (loss if scale == 1.0 else loss * scale).backward()
        with self.torch.no_grad():
            metrics = self._metrics(out.detach(), y, loss.detach())
        # The worker's loggers hear of a step here, inside the step's round,
        # so one that fails fails the round rather than the next one's
        # commit. The driver's hears the job's means (job_metrics).
        for cb in self.callbacks:
            cb.train(metrics, self.iteration + 1, self.epoch, self.workers)
        return list(metrics.items())

    def apply(self, epoch, epochs, iteration, steps_per_epoch):
        self.optimizer.step()
        self.iteration, self.epoch = iteration + 1, epoch
        self.completed = steps_per_epoch > 0 and self.iteration >= epochs * steps_per_epoch

    def evaluate(self, split, indices):
        ds = self.train_ds if split == 0 else self.test_ds
        torch = self.torch
        self.model.eval()
        sums, n = {}, 0
        with torch.no_grad():
            for start in range(0, len(indices), EVAL_BATCH):
                part = indices[start:start + EVAL_BATCH]
                x, y = self._batch(ds, part)
                out = self.model(x)
                m = self._metrics(out, y, self.loss_fn(out, y))
                for k, v in m.items():
                    sums[k] = sums.get(k, 0.0) + v * len(part)
                n += len(part)
        result = {k: v / n for k, v in sums.items()} if n else {}
        if split == 1 and result:
            for cb in self.callbacks:
                cb.test(result, self.iteration, self.epoch)
        return list(result.items())

    def job_metrics(self, split, metrics, iteration, epoch, workers):
        """The job's metrics, averaged over every worker's samples by the
        trainer, at the global iteration: what the driver callback sees."""
        self.workers = workers
        if self.driver is None:
            return
        if split == 0:
            self.driver.train(dict(metrics), iteration, epoch, workers)
        else:
            self.driver.test(dict(metrics), iteration, epoch)

    def _final_files(self):
        torch = self.torch
        folder = os.path.join(os.environ.get("RESULT_DIR", "."), "model")
        os.makedirs(folder, exist_ok=True)
        tmp = os.path.join(folder, ".model.pt.%d" % os.getpid())
        torch.save(self.model.state_dict(), tmp)
        os.replace(tmp, os.path.join(folder, "model.pt"))
        if not self.fm.save_to_onnx:
            return
        try:
            x, _ = self._batch(self.test_ds if len(self.test_ds) else self.train_ds, [0])
            self.model.eval()
            torch.onnx.export(self.model, x, os.path.join(folder, "model.onnx"))
            print("edtPyTorch: wrote the model as ONNX to %s" % os.path.join(folder, "model.onnx"))
        except Exception as exc:  # noqa: BLE001 - ONNX export is optional
            print("edtPyTorch: save_to_onnx: torch.onnx.export failed, no model.onnx written: %s" % exc,
                  file=sys.stderr)

    def finish(self):
        """The trainer is done with this worker: the parameters get memory of
        their own again (the flat buffers are freed next), the first worker
        to finish the whole run writes PyTorch's state_dict file, and the
        script's train() returns so the rest of the script runs (only where
        training finished)."""
        torch = self.torch
        with torch.no_grad():
            for _, p in self.named:
                p.data = p.data.clone()
                p.grad = None
        self.flat = self.gflat = None
        try:
            if self.completed:
                for cb in self.callbacks:
                    cb.end()
                if self.driver:
                    self.driver.end()
                if self._elect("final-model"):
                    self._final_files()
        finally:
            _script.completed = self.completed
            _script.release.set()
            if _script.thread is not None:
                _script.thread.join()
            sys.stdout.flush()
            sys.stderr.flush()
