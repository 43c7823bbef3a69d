"""WMLA's plugin package layout, shipped by loom so optimizer.py files run unchanged."""
