"""Spells: P(available at t+h) from how long up and down spells last, given the age of the current one.

A scheduler across zones asks how long spot will last in a zone and how soon it comes back. Availability
traces are long spells of "up" (at least one GPU: a value >= 0.5) and "down"; this model is a discrete
semi-Markov (alternating renewal) process of those two states:

- per state, a hazard by spell age (the chance that a spell `a` slots old ends at the next slot), piecewise
  constant on the age buckets of `duration.run_bucket` (1..12 slots exactly, then 13-24, 25-48, ...), estimated
  as ends / slots at risk (a Kaplan-Meier-like estimate: the ongoing last spell is right-censored, and the first
  spell, whose start was not seen, gives its exposure but not its end, as its true age is unknown);
- shrinkage, so that a short history (a 60-h window seen from its start) still gives a forecast: each bucket's
  hazard is pulled towards the state's pooled rate by `bucket_slots` slots of pseudo-exposure, and the pooled rate
  towards a prior spell length (`prior_up_hours`, `prior_down_hours`) by `prior_hours` of pseudo-exposure;
- optionally (`half_life_hours`) recent slots weigh more (a market's regime drifts).
Time of day was tried as a hazard multiplier per block of the day and did not help on the shared traces
(docs/decisions/zone-forecasts.md), so it is not here.

The forecast propagates the (state, age) distribution slot by slot from the current state and age: the
current spell's survival `p_spell_lasts(w)` and `p_available(w)`. The point forecast is the expected value:
the current value while the current spell lasts, else the mean value the history shows in the state reached
(requested x probability for a 0/requested series, the probability itself for 0/1). Quantiles are those of
that mixture (the current value, the empirical values seen up, those seen down). A history in which the state
never changed forecasts the last value (no evidence that a change can happen: a zone that always grants is
common); the prior takes over from the first change seen. Nothing is random.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from ..params import Interval
from .base import Predictor
from .duration import EXACT_RUNS, run_bucket, run_lengths

UP_AT = 0.5  # a value counts as "up" (at least one GPU, rounding) from here on
MAX_HAZARD = 0.999


def ends_and_exposure(up: np.ndarray, run: np.ndarray, buckets: int,
                      weight: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Per state (0 down, 1 up): spell ends and slots at risk per age bucket (the first spell's end left out, its
    age is unknown) and in total; `weight[i]` weighs the step from slot i to i + 1 (None: 1)."""
    n = up.size
    s, nxt = up[:-1].astype(np.int64), up[1:]
    end = (nxt != up[:-1]).astype(float)
    first_end = int(np.argmax(end)) if end.any() else n  # the end of the first (left-truncated) spell
    known = np.ones(n - 1)
    if first_end < n - 1:
        known[first_end] = 0.0
    b = np.minimum(run_bucket(run[:-1]), buckets - 1)
    wt = np.ones(n - 1) if weight is None else weight
    idx = s * buckets + b
    return {"bucket_ends": np.bincount(idx, weights=end * known * wt, minlength=2 * buckets).reshape(2, -1),
            "bucket_risk": np.bincount(idx, weights=wt, minlength=2 * buckets).reshape(2, -1),
            "ends": np.bincount(s, weights=end * wt, minlength=2), "risk": np.bincount(s, weights=wt, minlength=2)}


class Spells(Predictor):
    """Semi-Markov up/down spells: hazard by spell age, shrunk towards a prior."""

    name = "spells"

    def __init__(
        self,
        prior_up_hours: float = 12.0,
        prior_down_hours: float = 3.0,
        prior_hours: float = 12.0,
        bucket_slots: float = 10.0,
        max_run_bucket: int = 16,
        half_life_hours: float | None = None,
    ) -> None:
        self.prior_up_hours = prior_up_hours
        self.prior_down_hours = prior_down_hours
        self.prior_hours = prior_hours
        self.bucket_slots = bucket_slots
        self.max_run_bucket = max_run_bucket
        self.half_life_hours = half_life_hours

    _parameter_constraints = {
        "prior_up_hours": [Interval(Real, 0, None, closed="neither")],
        "prior_down_hours": [Interval(Real, 0, None, closed="neither")],
        "prior_hours": [Interval(Real, 0, None, closed="neither")],
        "bucket_slots": [Interval(Real, 0, None, closed="left")],
        "max_run_bucket": [Interval(Integral, 0, 30)],
        "half_life_hours": [Interval(Real, 0, None, closed="neither"), None],
    }

    # ------------------------------------------------------------------------------------------ fit

    def _fit(self, y: np.ndarray) -> None:
        up = y >= UP_AT
        run = run_lengths(up.astype(float))
        buckets = int(self.max_run_bucket) + 1
        # the age from which every older spell shares the last bucket's hazard (ages 1..cap are tracked)
        top = int(self.max_run_bucket)
        self.cap_ = top + 1 if top < EXACT_RUNS else EXACT_RUNS * 2 ** (top - EXACT_RUNS) + 1
        prior = 1.0 - np.exp(-self.slot_hours_ / np.array([self.prior_down_hours, self.prior_up_hours]))
        k0 = self.prior_hours / self.slot_hours_
        if y.size >= 2:
            weight = None
            if self.half_life_hours is not None:
                weight = 0.5 ** ((y.size - 2 - np.arange(y.size - 1)) * self.slot_hours_ / self.half_life_hours)
            c = ends_and_exposure(up, run, buckets, weight)
        else:
            c = {"bucket_ends": np.zeros((2, buckets)), "bucket_risk": np.zeros((2, buckets)),
                 "ends": np.zeros(2), "risk": np.zeros(2)}
        rate = (c["ends"] + k0 * prior) / (c["risk"] + k0)  # per state: the pooled rate, shrunk to the prior
        ks = float(self.bucket_slots)
        hazard = (c["bucket_ends"] + ks * rate[:, None]) / np.maximum(c["bucket_risk"] + ks, 1e-12)
        hazard = np.where(c["bucket_risk"] + ks > 0, hazard, rate[:, None])
        ages = np.arange(1, self.cap_ + 1)
        self.hazard_ = np.minimum(hazard[:, np.minimum(run_bucket(ages), buckets - 1)], MAX_HAZARD)  # (2, cap)
        self.values_ = (np.sort(y[~up]), np.sort(y[up]))
        self.means_ = (float(self.values_[0].mean()) if self.values_[0].size else 0.0,
                       float(self.values_[1].mean()) if self.values_[1].size else 1.0)
        self.state_, self.age_ = bool(up[-1]), int(run[-1])
        self.changed_ = bool(np.any(up[1:] != up[:-1]))

    def _update(self, y_new: np.ndarray) -> None:
        for v in y_new:
            s = bool(v >= UP_AT)
            if s == self.state_:
                self.age_ += 1
            else:
                self.state_, self.age_, self.changed_ = s, 1, True

    # ------------------------------------------------------------------------------------- forecast

    def _propagate(self, w: int) -> tuple[np.ndarray, np.ndarray]:
        """P(up at t+h) and P(the current spell lasts through t+h), h = 1..w."""
        key = ("spells", w)
        if key in self._memo_:
            return self._memo_[key]
        s0 = int(self.state_)
        if not self.changed_:
            out = (np.full(w, float(s0)), np.ones(w))
            self._memo_[key] = out
            return out
        cap = self.cap_
        dist = np.zeros((2, cap))  # spells begun after the origin, by state and age (index age - 1)
        orig, age = 1.0, min(self.age_, cap)
        lam = self.hazard_
        p_up, lasts = np.empty(w), np.empty(w)
        for j in range(w):
            ended = dist * lam
            stay = dist - ended
            new = np.zeros((2, cap))
            new[:, 1:] = stay[:, :-1]
            new[:, -1] += stay[:, -1]
            new[0, 0] += ended[1].sum()
            new[1, 0] += ended[0].sum()
            lo = orig * lam[s0, age - 1]
            new[1 - s0, 0] += lo
            orig -= lo
            age = min(age + 1, cap)
            dist = new
            p_up[j] = dist[1].sum() + (orig if s0 else 0.0)
            lasts[j] = orig
        out = (np.clip(p_up, 0.0, 1.0), np.clip(lasts, 0.0, 1.0))
        self._memo_[key] = out
        return out

    def p_available(self, w: int) -> np.ndarray:
        """P(up, at least one GPU, at t+h) for h = 1..w."""
        self._check_fitted()
        return self._propagate(int(w))[0].copy()

    def p_spell_lasts(self, w: int) -> np.ndarray:
        """P(the current spell, up or down, lasts through t+h) for h = 1..w."""
        self._check_fitted()
        return self._propagate(int(w))[1].copy()

    def long_run(self) -> float:
        """The stationary mean of the fitted process: the states' mean values weighted by their mean spell lengths."""
        self._check_fitted()
        if not self.changed_:
            return float(self.y_[-1])
        surv = np.cumprod(1.0 - self.hazard_, axis=1)  # P(length > a), a = 1..cap
        mean_len = 1.0 + surv[:, :-1].sum(axis=1) + surv[:, -1] / self.hazard_[:, -1]
        pi_up = mean_len[1] / mean_len.sum()
        return float(pi_up * self.means_[1] + (1 - pi_up) * self.means_[0])

    def _weights(self, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per h: weight of the current value, of the values seen down, of the values seen up."""
        p_up, lasts = self._propagate(w)
        if self.state_:
            return lasts, 1.0 - p_up, np.maximum(p_up - lasts, 0.0)
        return lasts, np.maximum(1.0 - p_up - lasts, 0.0), p_up

    def _predict(self, w: int) -> np.ndarray:
        last = float(self.y_[-1])
        cur, down, up = self._weights(w)
        return cur * last + down * self.means_[0] + up * self.means_[1]

    def _predict_quantile(self, w: int, q: float) -> np.ndarray:
        last = float(self.y_[-1])
        cur, down, up = self._weights(w)
        lo_vals, up_vals = self.values_
        if not lo_vals.size:
            lo_vals = np.zeros(1)
        if not up_vals.size:
            up_vals = np.ones(1)
        grid = np.unique(np.concatenate([[last], lo_vals, up_vals]))
        cdf_lo = np.searchsorted(lo_vals, grid, side="right") / lo_vals.size
        cdf_up = np.searchsorted(up_vals, grid, side="right") / up_vals.size
        cdf = (cur[:, None] * (grid >= last)[None, :] + down[:, None] * cdf_lo[None, :]
               + up[:, None] * cdf_up[None, :])
        cdf /= np.maximum(cdf[:, -1:], 1e-12)
        return grid[np.argmax(cdf >= q - 1e-9, axis=1)]
