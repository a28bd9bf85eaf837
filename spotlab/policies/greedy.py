"""Greedy: spot whenever it is available, otherwise wait; on-demand only when the deadline forces it.

The rules are those of the Can't Be Late simulator's Greedy (Wu et al., NSDI'24), generalised to
N_min..N_max GPUs: take all obtainable spot GPUs (up to N_max), and fall back to N_max on-demand
GPUs under the deadline rules of `base.deadline_rules`.
"""

from __future__ import annotations

from ..simulation.interface import Observation
from .base import OnlinePolicy
from .deadline import deadline_rules, spot_only


class Greedy(OnlinePolicy):
    name = "greedy"
    independent_windows = True
    reads_history = False

    def act(self, obs: Observation):
        o, s = spot_only(self.job, obs)
        return deadline_rules(self.job, obs, o, s, self.ctx_.episodes.slot_hours)
