"""The base of the online policies: parameters in scikit-learn's conventions and the context of the episode.

The interface itself (what a policy is told, sees and returns) is the engine's: `spotlab.simulation.interface`.
"""

from __future__ import annotations

from typing import ClassVar

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
    # A window's decisions never depend on another window's: the runner may simulate the windows in blocks.
    independent_windows: ClassVar[bool] = False
    # Reads the market's past before each window (forecasts, spell statistics): the windows keep their history.
    reads_history: ClassVar[bool] = True

    def reset(self, ctx: Context) -> None:
        self.check_params()
        self.ctx_ = ctx

    @property
    def job(self) -> Job:
        return self.ctx_.job


# --------------------------------------------------------------------------- deadline arithmetic


# ------------------------------------------------------------------ pieces of the baseline rules


