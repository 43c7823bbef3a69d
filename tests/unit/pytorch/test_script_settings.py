"""Runs edt_script_settings.py on small scripts and checks what it reads:
numbers, module-level constants, argparse defaults and the job's arguments
over them, keywords; and that a syntax error, a missing train() call, an
unknown keyword, a non-integer and a value that cannot be told before the
job runs are refused naming the line."""
import json
import os
import subprocess
import sys
import tempfile

READER = sys.argv[1]
failures = 0
checks = 0

try:
    import torch  # noqa: F401 - the reader refuses a Python without it
except ImportError:
    print("SKIP: no torch")
    sys.exit(77)

HEAD = "from fabric_model import FabricModel\nm = FabricModel(None, None, None, None)\n"


def run(body, *args, head=HEAD):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "main.py")
        with open(path, "w") as f:
            f.write(head + body)
        p = subprocess.run([sys.executable, "-I", READER, path, *args], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr


def expect(what, cond, detail=""):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL: %s %s" % (what, detail))


def expect_settings(what, body, want, *args):
    rc, out, err = run(body, *args)
    got = json.loads(out)["training"] if rc == 0 else None
    expect(what, got == want, "got %r (%s), expected %r" % (got, err.strip(), want))


def expect_refused(what, body, text, *args, status=2):
    rc, _, err = run(body, *args)
    expect(what, rc == status and text in err, "exit %d, stderr %r, expected %r" % (rc, err, text))


expect_settings("numbers", "m.train(3, 32)\n", {"epochs": 3, "batch_size": 32})
expect_settings("keywords and None", "m.train(epoch_number=2, batch_size=8, engines_number=None, "
                "validation_freq=0, effective_batch_size=64)\n",
                {"epochs": 2, "batch_size": 8, "validation_freq": 0, "effective_batch_size": 64})
expect_settings("all seven positionally", "m.train(1, 2, 3, 4, 5, 6, 8)\n",
                {"epochs": 1, "batch_size": 2, "engines_number": 3, "num_dataloader_threads": 4,
                 "validation_freq": 5, "checkpoint_freq": 6, "effective_batch_size": 8})
expect_settings("module-level constants", "EPOCHS = 5\nBATCH = 16\nm.train(EPOCHS, BATCH)\n",
                {"epochs": 5, "batch_size": 16})
argp = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=4)\n"
        "p.add_argument('--batch-size', type=int, default=64, help='per worker')\n"
        "p.add_argument('--lr', type=float, default=0.1)\nargs = p.parse_args()\n"
        "m.train(args.epochs, args.batch_size)\n")
expect_settings("argparse defaults", argp, {"epochs": 4, "batch_size": 64})
expect_settings("the job's arguments over the defaults", argp, {"epochs": 7, "batch_size": 64},
                "--epochs", "7", "--lr", "0.5")
expect_settings("a FabricModel(...).train() chain", "FabricModel(1, 2, 3, 4).train(2, 4)\n",
                {"epochs": 2, "batch_size": 4}, )
expect_refused("a syntax error", "m.train(1,\n", "main.py line 3: syntax error")
expect_refused("no train() call", "print('hi')\n", "main.py never calls FabricModel(...).train(...)")
expect_refused("a train() of something else", "model = object()\nmodel.train(1, 2)\n",
               "never calls FabricModel(...).train(...)")
expect_refused("an unknown keyword", "m.train(1, 2, epochs=3)\n", "has no argument 'epochs'")
expect_refused("a batch size that is not a whole number", "m.train(1, 2.5)\n",
               "train()'s batch_size is 2.5; expected a whole number")
expect_refused("epochs computed at run time", "import os\nm.train(int(os.environ['E']), 2)\n",
               "line 4: cannot tell train()'s epoch_number (int(os.environ['E']))")
expect_refused("no batch size", "m.train(epoch_number=1)\n", "called without batch_size")

print("%d checks, %d failed" % (checks, failures))
sys.exit(1 if failures else 0)
