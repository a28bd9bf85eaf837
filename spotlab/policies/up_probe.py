"""UP(A): uniform progress that ranks zones by how often spot was found there lately, probing the others in the
background (SkyNomad's `availability probe` baseline; SPEC §9).

Each zone keeps its last `samples` outcomes (1: spot was there); its score is their mean, 0.5 before any. Uniform
progress decides as UP(S) does. When it wants spot and runs none, it tries the zones best score first (every try
is an outcome); a running spot instance is kept while its zone scores within 1e-6 of the best. While on spot it
probes one other zone whose probe is due (every `probe_every_hours`; fewest outcomes first, then the market's
order), paying the rules' probe price when spot is there, and the zone it runs in records a success every
`probe_every_hours`; losing spot there records a failure. The peers' order of these steps is kept
(docs/decisions/zone-baselines.md). On one zone it is UP(S).
"""

from __future__ import annotations

from collections import deque
from numbers import Integral, Real

import numpy as np

from ..params import Interval
from ..simulation.interface import Action, Context, Observation
from .up_failover import NONE, OD, SPOT, UpFailover

TIE = 1e-6


class UpProbe(UpFailover):
    """Uniform progress that goes where spot was found most often lately, probing other zones while on spot."""

    name = "up_probe"
    _parameter_constraints = {"samples": [Interval(Integral, 1, None)],
                              "probe_every_hours": [Interval(Real, 0, None, closed="neither")]}
    _parameter_help = {
        "samples": "outcomes (spot found or not) remembered per zone; a zone's score is their mean",
        "probe_every_hours": "hours between two probes of a zone (and between two successes of the zone it runs in)",
    }

    def __init__(self, samples: int = 5, probe_every_hours: float = 2.0) -> None:
        self.samples = samples
        self.probe_every_hours = probe_every_hours

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        W = ctx.episodes.n
        Z = 1 if ctx.zoned is None else ctx.zoned.z
        self.every_ = max(1, int(round(self.probe_every_hours / ctx.episodes.slot_hours)))
        self.seen_ = [[deque(maxlen=self.samples) for _ in range(Z)] for _ in range(W)]
        self.main_ = np.full(W, -1, dtype=np.int64)  # the zone whose spot it runs on, as last seen
        self.next_sample_ = np.zeros((W, Z), dtype=np.int64)
        self.next_probe_ = np.zeros((W, Z), dtype=np.int64)

    def _scores(self, w: int, obs: Observation) -> np.ndarray:
        """Each zone's score in window `w`: the share of its remembered outcomes that found spot (0.5 before any)."""
        return np.array([np.mean(d) if d else 0.5 for d in self.seen_[w]])

    def _keeps(self, score: np.ndarray, z: int, best: int) -> bool:
        return z == best or score[z] >= score[best] - TIE

    def _timer(self) -> np.ndarray:
        """When the zone it runs on next records a success."""
        return self.next_sample_

    def _fallback_od(self, none: np.ndarray, leave: np.ndarray, req2: np.ndarray, fallback: np.ndarray):
        """Where no zone has spot: on demand (where) when uniform progress without spot says so, unless it had
        just left on demand to try spot."""
        return none & ~leave & (req2 == OD), fallback

    def act(self, obs: Observation):
        if obs.first_spot is None:  # one zone: nothing to rank or probe
            return super().act(obs)
        job, t = self.job, obs.t
        W, Z = obs.active.size, obs.zones_spot_price.shape[0]
        zone, running, current, fallback = self._observe(obs)
        on_spot = current == SPOT
        for w in np.flatnonzero(obs.active):  # what the main zone's spot told since the last slot
            m = self.main_[w]
            if m >= 0 and not (on_spot[w] and zone[w] == m):
                self.seen_[w][m].append(0)
                self.main_[w] = -1
            if on_spot[w]:
                self.main_[w] = zone[w]
            m = self.main_[w]
            if m >= 0 and t >= self._timer()[w, m]:
                self.seen_[w][m].append(1)
                self._timer()[w, m] = t + self.every_
        req, leave = self.decide(obs, current, np.ones(W, dtype=bool))
        o, s, to = np.zeros(W, dtype=np.int64), np.zeros(W, dtype=np.int64), zone.copy()
        spot_now = np.zeros(W, dtype=bool)  # on spot after this slot's decision: a background probe follows
        order = np.full((W, Z), -1, dtype=np.int64)
        for w in np.flatnonzero(obs.active & (req == SPOT)):
            score = self._scores(w, obs)
            rank = np.lexsort((np.arange(Z), -score))
            if on_spot[w] and self._keeps(score, zone[w], rank[0]):
                s[w], spot_now[w] = obs.held_s[w], True
            else:
                order[w] = rank
        trying = order[:, 0] >= 0
        if trying.any():
            found = obs.first_spot(order)
            for w in np.flatnonzero(trying):
                for z in order[w]:  # every try is an outcome: failures up to the zone that had spot
                    self.seen_[w][z].append(int(z == found[w]))
                    if z == found[w]:
                        break
            got = trying & (found >= 0)
            s, to, spot_now = np.where(got, job.n_max, s), np.where(got, found, to), spot_now | got
            for w in np.flatnonzero(got):
                self.main_[w] = found[w]
                self._timer()[w, found[w]] = t + self.every_
            none = trying & (found < 0)
            if none.any():
                req2, _ = self.decide(obs, np.full(W, NONE), np.zeros(W, dtype=bool))
                go_od, where = self._fallback_od(none, leave, req2, fallback)
                o, to = np.where(go_od, job.n_max, o), np.where(go_od, where, to)
                spot_now |= self._probes_after_od(none)
        od = obs.active & (req == OD)
        o = np.where(od, job.n_max, o)
        to = np.where(od, np.where(current == OD, zone, fallback), to)
        self._probe(obs, spot_now, to)
        return Action(o, s, None, to)

    def _probes_after_od(self, none: np.ndarray) -> np.ndarray:
        """Windows that probe although no zone had spot (none here: it probes only while on spot)."""
        return np.zeros_like(none)

    def _probe(self, obs: Observation, spot_now: np.ndarray, at: np.ndarray) -> None:
        """One background probe per window on spot: the due zone with the fewest outcomes, then the first."""
        t, Z = obs.t, obs.zones_spot_price.shape[0]
        target = np.full(spot_now.size, -1, dtype=np.int64)
        for w in np.flatnonzero(spot_now):
            due = [z for z in range(Z) if z != self.main_[w] and z != at[w] and t >= self.next_probe_[w, z]]
            if due:
                target[w] = min(due, key=lambda z: (len(self.seen_[w][z]), z))
        if (target >= 0).any():
            ok = obs.probe(target)
            for w in np.flatnonzero(target >= 0):
                self.seen_[w][target[w]].append(int(ok[w]))
                self.next_probe_[w, target[w]] = t + self.every_
