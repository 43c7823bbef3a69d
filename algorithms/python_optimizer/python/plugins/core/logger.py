"""`from plugins.core.logger import logger`, as WMLA's plugin optimizers do.

Records go to stderr, which loom keeps in the task's search.log; stdout is
the line protocol between loom and the optimizer.
"""
import logging
import os
import sys

logger = logging.getLogger("plugin_optimizer")
if not logger.handlers:
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(_handler)
logger.setLevel(os.environ.get("LOOM_OPTIMIZER_LOG_LEVEL", "INFO").upper())
