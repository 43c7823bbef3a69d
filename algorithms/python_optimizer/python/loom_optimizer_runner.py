"""Runs a WMLA plugin optimizer (optimizer.py defining PluginOptimizer) for
loom's python_optimizer search plugin, over a line protocol: one JSON object
per line on stdin, one reply per line on stdout.

    {"op": "create", "dir": D, "name": N, "hyperParams": [...], "algoParams": {...}}
    {"op": "search", "n": 2, "results": [...]}      -> {"ok": true, "samples": [{...}]}
    {"op": "get_state"}                            -> {"ok": true, "state": ...}
    {"op": "set_state", "state": ...}              -> {"ok": true}
A failure replies {"ok": false, "error": "..."}.
"""
import importlib.util
import json
import os
import sys
import traceback


def main():
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout = sys.stderr  # the optimizer's prints must not break the protocol
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    opt = None
    for line in sys.stdin:
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "create":
                sys.path.insert(0, req["dir"])
                spec = importlib.util.spec_from_file_location(
                    "optimizer", os.path.join(req["dir"], "optimizer.py"))
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                opt = module.PluginOptimizer(req["name"], req["hyperParams"], **req["algoParams"])
                reply = {"ok": True}
            elif op == "search":
                samples = opt.search(req["n"], req["results"])
                reply = {"ok": True, "samples": list(samples or [])}
            elif op == "get_state":
                reply = {"ok": True, "state": opt.get_state() if hasattr(opt, "get_state") else None}
            elif op == "set_state":
                if hasattr(opt, "set_state"):
                    opt.set_state(req["state"])
                reply = {"ok": True}
            else:
                reply = {"ok": False, "error": "unknown op %r" % (op,)}
        except Exception as e:  # the plugin's error goes back to loom, named
            traceback.print_exc()
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        proto.write(json.dumps(reply) + "\n")
        proto.flush()


if __name__ == "__main__":
    main()
