"""The base of the online policies: parameters in scikit-learn's conventions and the context of the episode.

The interface itself (what a policy is told, sees and returns) is the engine's: `spotlab.simulation.interface`.
"""

from __future__ import annotations

from ..errors import PolicyError
from ..jobs.job import Job
from ..params import Params
from ..simulation.interface import Context


class OnlinePolicy(Params):
    """Base of the online policies: keeps the context. `online = True` tells `make_policy` that the
    policy decides without hindsight, so the deadline safety net is put around it; hindsight planners
    (the optimum) set it False and are never overridden."""

    name = "online"
    online = True
    param_error = PolicyError

    def reset(self, ctx: Context) -> None:
        self.check_params()
        self.ctx_ = ctx

    @property
    def job(self) -> Job:
        return self.ctx_.job


# --------------------------------------------------------------------------- deadline arithmetic


# ------------------------------------------------------------------ pieces of the baseline rules


