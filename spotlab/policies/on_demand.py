"""On-demand only: N_max on-demand GPUs from the first slot to the end. The cost ceiling."""

from __future__ import annotations

import numpy as np

from ..simulation.interface import Observation
from .base import OnlinePolicy


class OnDemand(OnlinePolicy):
    name = "on_demand"
    independent_windows = True
    reads_history = False

    def act(self, obs: Observation):
        w = obs.remaining.shape[0]
        return np.full(w, self.job.n_max, dtype=np.int64), np.zeros(w, dtype=np.int64)
