"""Reads a FabricModel script's train() settings without running it.

    python3 -I edt_script_settings.py SCRIPT [ARGS...]

loom plans an elastic job (epochs, batch sizes, validation and checkpoint
frequency) before any worker starts, so at submission it reads the
arguments of the script's `FabricModel(...).train(...)` call from its
syntax tree: numbers, module-level constants and argparse options (their
defaults, overridden by the job's program arguments ARGS). Nothing of the
script runs. Prints {"training": {...}} on stdout; on a problem prints it
on stderr and exits 2; exits 3 when this Python has no torch.
"""
import argparse
import ast
import importlib.util
import json
import sys

TRAIN_PARAMS = ["epoch_number", "batch_size", "engines_number", "num_dataloader_threads",
                "validation_freq", "checkpoint_freq", "effective_batch_size"]
KNOB = {"epoch_number": "epochs", "batch_size": "batch_size", "engines_number": "engines_number",
        "num_dataloader_threads": "num_dataloader_threads", "validation_freq": "validation_freq",
        "checkpoint_freq": "checkpoint_freq", "effective_batch_size": "effective_batch_size"}
REQUIRED = ("epoch_number", "batch_size")
UNRESOLVED = object()


def fail(msg, status=2):
    sys.stderr.write(msg + "\n")
    sys.exit(status)


def literal(node):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return UNRESOLVED


class Script:
    def __init__(self, tree, argv):
        self.constants = {}
        self.fabric_names = set()
        self.parsers = {}
        self.arg_values = None
        self.argv = argv
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._assign(node.targets[0], node.value)
        self._collect_argparse(tree)

    def _assign(self, target, value):
        if not isinstance(target, ast.Name):
            return
        v = literal(value)
        if v is not UNRESOLVED:
            self.constants[target.id] = v
        if isinstance(value, ast.Call) and self._callee(value).endswith("FabricModel"):
            self.fabric_names.add(target.id)

    @staticmethod
    def _callee(call):
        f = call.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""

    def _collect_argparse(self, tree):
        """Rebuilds the script's argparse options from their literal parts and
        parses the job's arguments with them."""
        parser = argparse.ArgumentParser(add_help=False)
        types = {"int": int, "float": float, "str": str}
        found = False
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and self._callee(node) == "add_argument"):
                continue
            names = [literal(a) for a in node.args]
            if not names or any(not isinstance(n, str) for n in names):
                continue
            kwargs = {}
            for kw in node.keywords:
                if kw.arg in ("default", "dest", "nargs", "action") and literal(kw.value) is not UNRESOLVED:
                    kwargs[kw.arg] = literal(kw.value)
                elif kw.arg == "type" and isinstance(kw.value, ast.Name) and kw.value.id in types:
                    kwargs["type"] = types[kw.value.id]
            try:
                parser.add_argument(*names, **kwargs)
                found = True
            except (ValueError, TypeError, argparse.ArgumentError):
                continue
        if found:
            try:
                self.arg_values, _ = parser.parse_known_args(self.argv)
            except SystemExit:
                fail("the job's arguments %s do not parse with the script's argparse options" % self.argv)

    def value(self, node):
        v = literal(node)
        if v is not UNRESOLVED:
            return v
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        if isinstance(node, ast.Attribute) and self.arg_values is not None \
                and hasattr(self.arg_values, node.attr):
            return getattr(self.arg_values, node.attr)
        return UNRESOLVED

    def train_call(self, tree):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "train":
                recv = node.func.value
                if (isinstance(recv, ast.Name) and recv.id in self.fabric_names) or \
                        (isinstance(recv, ast.Call) and self._callee(recv).endswith("FabricModel")):
                    return node
        return None


def main():
    if len(sys.argv) < 2:
        fail("usage: edt_script_settings.py SCRIPT [ARGS...]")
    path, argv = sys.argv[1], sys.argv[2:]
    if importlib.util.find_spec("torch") is None:
        fail("needs PyTorch, and %s has no module named 'torch' (install Debian's "
             "python3-torch)" % sys.executable, 3)
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as exc:
        fail("cannot read the script: %s" % exc)
    name = path.rsplit("/", 1)[-1]
    try:
        tree = ast.parse(source, filename=name)
    except SyntaxError as exc:
        fail("%s line %s: syntax error: %s\n    %s" % (name, exc.lineno, exc.msg, (exc.text or "").strip()))
    script = Script(tree, argv)
    call = script.train_call(tree)
    if call is None:
        fail("%s never calls FabricModel(...).train(...): an edtPyTorch script builds a FabricModel "
             "and calls its train(epoch_number, batch_size, ...)" % name)
    given = dict(zip(TRAIN_PARAMS, call.args))
    for kw in call.keywords:
        if kw.arg not in TRAIN_PARAMS:
            fail("%s line %d: FabricModel.train() has no argument %r (it takes %s)"
                 % (name, call.lineno, kw.arg, ", ".join(TRAIN_PARAMS)))
        given[kw.arg] = kw.value
    training = {}
    for param, node in given.items():
        v = script.value(node)
        if v is UNRESOLVED:
            if param in REQUIRED:
                fail("%s line %d: cannot tell train()'s %s (%s) before the job runs: write a number, "
                     "a module-level constant or an argparse option with a default"
                     % (name, node.lineno, param, ast.unparse(node)))
            continue
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int):
            fail("%s line %d: train()'s %s is %r; expected a whole number" % (name, node.lineno, param, v))
        training[KNOB[param]] = v
    for param in REQUIRED:
        if KNOB[param] not in training:
            fail("%s line %d: FabricModel.train() is called without %s" % (name, call.lineno, param))
    json.dump({"training": training}, sys.stdout)


if __name__ == "__main__":
    main()
