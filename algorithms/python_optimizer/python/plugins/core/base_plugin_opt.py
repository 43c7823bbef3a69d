"""`from plugins.core.base_plugin_opt import BasePluginOptimizer`, WMLA's base class.

A plugin optimizer subclasses it:

    class PluginOptimizer(BasePluginOptimizer):
        def __init__(self, name, hyper_parameters, **kwargs): ...
        def search(self, number_samples, last_exp_results): ...   # -> [{name: value}]
        def get_state(self): ...          # optional, JSON-serialisable
        def set_state(self, state): ...   # optional

`hyper_parameters` is the task's hyperParams list as WMLA writes it (dicts with
name, type, dataType, minDbVal/maxDbVal, minIntVal/maxIntVal, discreteDbVal/
discreteIntVal/discreateStrVal, step, power); kwargs are the task's algoParams,
every value a string. `last_exp_results` lists the experiments that ended since
the previous call, each a dict:
    {"id": 3, "hyperParameters": {"lr": 0.01, "hidden": 256},
     "result": 0.41, "state": "FINISHED"}
with "result" None when the experiment reported no objective (state FAILED or
KILLED, or FINISHED without the metric). Returning fewer than number_samples
(or none) means "wait for results".
"""


class BasePluginOptimizer(object):
    def __init__(self, name, hyper_parameters, **kwargs):
        self.name = name
        self.hyper_parameters = hyper_parameters
        self.algo_params = kwargs

    def search(self, number_samples, last_exp_results):
        raise NotImplementedError("PluginOptimizer.search(number_samples, last_exp_results)")

    def get_state(self):
        return None

    def set_state(self, state):
        pass
