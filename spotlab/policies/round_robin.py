"""The multi-region Can't Be Late leaderboard's baseline: greedy spot in the zone it is in; where that zone has none,
move to the next zone in the market's order and wait a slot; on demand when the deadline says so (SPEC §9).

Its two deadline rules are the leaderboard program's (on demand when one restart no longer fits; when two no longer
fit, keep a spot instance that ran last slot and still has spot, else on demand), not `deadline.deadline_rules`,
which keeps spot in the first case too. It reads no other zone's availability: it finds
spot by visiting zones one slot at a time, which is what the leaderboard's round-robin program does
(docs/decisions/zone-baselines.md).
"""

from __future__ import annotations

import numpy as np

from ..simulation.interface import Action, Observation
from .base import OnlinePolicy
from .deadline import deadline_pressure


class RoundRobin(OnlinePolicy):
    """Spot where it is, else the next zone and a slot's wait; on demand when the deadline needs it."""

    name = "round_robin"
    independent_windows = True
    reads_history = False

    def act(self, obs: Observation):
        job, dt = self.job, self.ctx_.episodes.slot_hours
        W = obs.active.size
        zones = 1 if obs.zones_spot_price is None else obs.zones_spot_price.shape[0]
        zone = obs.zone if obs.zone is not None else np.zeros(W, dtype=np.int64)
        has_spot = obs.avail >= job.n_min
        o = np.zeros(W, dtype=np.int64)
        s = np.where(has_spot, job.n_max, 0)
        to = zone.copy()
        if zones > 1:
            to = np.where(has_spot, zone, (zone + 1) % zones)
        need2 = deadline_pressure(job, obs, dt, extra_overheads=2)
        kept = (obs.prev_s > 0) & has_spot
        o = np.where(need2, np.where(kept, 0, job.n_max), o)
        s = np.where(need2, np.where(kept, job.n_max, 0), s)
        to = np.where(need2, zone, to)
        need1 = deadline_pressure(job, obs, dt, extra_overheads=1)
        o = np.where(need1, job.n_max, o)
        s = np.where(need1, 0, s)
        to = np.where(need1, zone, to)
        return Action(o, s, None, to)
