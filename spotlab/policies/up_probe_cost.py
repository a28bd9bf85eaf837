"""UP(AP): UP(A) whose zones are ranked by the share of probes that found spot per dollar of spot price (SkyNomad's
`probe cost ratio` baseline; SPEC §9).

What it changes from UP(A) (`up_probe`): every outcome since the start counts (no window); a zone's score is that
share divided by its spot price now; a running spot instance is kept while its zone scores at least `keep_share`
of the best; every zone whose probe is due is probed in the same slot (every `probe_every_hours`, in the market's
order), also when no zone had spot and it went on demand in the first zone; the zone it runs in records a success
on the same timer (docs/decisions/zone-baselines.md).
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..params import Interval
from ..simulation.interface import Observation
from .up_failover import OD
from .up_probe import UpProbe


class UpProbeCost(UpProbe):
    """UP(A) ranking zones by spot found per dollar, probing every due zone while on spot."""

    name = "up_probe_cost"
    _parameter_constraints = {"samples": [Interval(Integral, 1, None), None],
                              "probe_every_hours": [Interval(Real, 0, None, closed="neither")],
                              "keep_share": [Interval(Real, 0, 1)]}
    _parameter_help = {
        "samples": "outcomes remembered per zone (None: all of them)",
        "probe_every_hours": "hours between two probes of a zone (and between two successes of the zone it runs in)",
        "keep_share": "a running spot instance is kept while its zone scores at least this share of the best",
    }

    def __init__(self, samples: int | None = None, probe_every_hours: float = 1.0, keep_share: float = 0.9) -> None:
        self.samples = samples
        self.probe_every_hours = probe_every_hours
        self.keep_share = keep_share

    def _scores(self, w: int, obs: Observation) -> np.ndarray:
        return super()._scores(w, obs) / obs.zones_spot_price[:, w]

    def _keeps(self, score: np.ndarray, z: int, best: int) -> bool:
        return z == best or score[z] >= self.keep_share * score[best]

    def _timer(self) -> np.ndarray:
        return self.next_probe_

    def _fallback_od(self, none, leave, req2, fallback):
        return none & (req2 == OD), np.zeros_like(fallback)

    def _probes_after_od(self, none: np.ndarray) -> np.ndarray:
        return none

    def _probe(self, obs: Observation, spot_now: np.ndarray, at: np.ndarray) -> None:
        """Every due zone, in the market's order, but the one it runs on and any where it runs spot."""
        t, Z = obs.t, obs.zones_spot_price.shape[0]
        for z in range(Z):
            ask = spot_now & (self.main_ != z) & (at != z) & (t >= self.next_probe_[:, z])
            if not ask.any():
                continue
            ok = obs.probe(np.where(ask, z, -1))
            for w in np.flatnonzero(ask):
                self.seen_[w][z].append(int(ok[w]))
                self.next_probe_[w, z] = t + self.every_
