"""Per-horizon model choice by track record: use another model at horizon h only once it has beaten persistence there.

Which model forecasts a spot market best depends on the zone, the slot length and the horizon: on
10-minute availability persistence is nearly unbeatable at h = 1, while a daily-cycle model can be far
better 12 hours ahead. A model chosen on one zone is often worse than persistence on the next. `auto`
runs every candidate side by side and keeps, per horizon, the score of each one's forecasts against
persistence's on the same origins *as the outcomes arrive* (never looking ahead: a forecast made at t
for t+h is scored when y[t+h] is observed, by `update` or by the next `fit`).

At each origin and horizon h it forecasts with the candidate whose recent mean absolute error is lowest
and beats persistence's by `z` standard errors (paired differences over blocks of max(h, 6) origins,
since overlapping h-step errors are correlated), after at least `min_scored` scored forecasts; otherwise
it forecasts persistence. The track record spans refits of the same object (only the last `memory_hours`
count, markets drift), so in a rolling evaluation the choice sharpens as the evaluation goes on; the
first forecasts of a fresh object are persistence. Quantiles come from the recent errors of the forecast
actually used.
"""

from __future__ import annotations

from collections import deque
from numbers import Integral, Real

import numpy as np

from ..errors import PredictionError
from ..params import Interval, positive_hours
from .base import MIN_RESIDUALS, Predictor, persistence_errors, slots_per
from .gbm import one_openmp_thread
from .registry import MODELS, make_predictor

DEFAULT_CANDIDATES = ("seasonal_naive", "ets", "arima", "gbm", "duration")


class Auto(Predictor):
    """Persistence, or per horizon the candidate that has clearly beaten it on the recent outcomes."""

    name = "auto"

    def __init__(
        self,
        candidates: tuple[str, ...] = DEFAULT_CANDIDATES,
        max_horizon: int = 24,
        z: float = 2.0,
        min_scored: int = 144,
        memory_hours: float = 336.0,
    ) -> None:
        self.candidates = candidates
        self.max_horizon = max_horizon
        self.z = z
        self.min_scored = min_scored
        self.memory_hours = memory_hours

    _parameter_constraints = {
        "max_horizon": [Interval(Integral, 1, None)],
        "min_scored": [Interval(Integral, 1, None)],
        "z": [Interval(Real, 0, None)],
        "memory_hours": [positive_hours],
    }

    def _check_together(self) -> None:
        names = (self.candidates,) if isinstance(self.candidates, str) else tuple(self.candidates)
        if not names:
            raise PredictionError("auto: candidates must name at least one model")
        for c in names:
            if c not in MODELS or c in ("auto", "persistence"):
                allowed = ", ".join(m for m in MODELS if m not in ("auto", "persistence"))
                raise PredictionError(f"auto: unknown candidate {c!r}; choose from {allowed}")

    def _names(self) -> tuple[str, ...]:
        return (self.candidates,) if isinstance(self.candidates, str) else tuple(self.candidates)

    def min_history(self, slot_hours: float = 1.0) -> int:
        return 2  # candidates that need more history sit out until it is there

    # ------------------------------------------------------------------------------------------ fit

    def _fit(self, y: np.ndarray) -> None:

        H, names = int(self.max_horizon), self._names()
        end = self.t0_ + y.size - 1  # absolute index of the origin
        fresh = (getattr(self, "record_", None) is None or getattr(self, "record_names_", None) != names
                 or end < self.seen_)  # another series, or going back in time: start a new record
        if fresh:
            keep = slots_per(float(self.memory_hours), self.slot_hours_)
            # per (candidate, horizon): recent |model error| - |persistence error|, and the model's errors
            self.record_ = [[deque(maxlen=keep) for _ in range(H)] for _ in names]
            self.errors_ = [[deque(maxlen=keep) for _ in range(H)] for _ in names]
            self.pending_: dict[int, np.ndarray] = {}
            self.seen_ = end
            self.record_names_ = names
        else:  # outcomes that arrived with this fit instead of through update: score them first
            start = self.t0_
            for p in range(self.seen_ + 1, end + 1):
                if p - start >= 1:
                    self._score(p, y[p - start], lambda a: y[a - start] if a >= start else None)
            self.seen_ = end
            self.pending_ = {o: f for o, f in self.pending_.items() if o > end - H}
        # The same candidate objects are refitted (ARIMA and ETS warm-start from their last parameters).
        if fresh or getattr(self, "pool_", None) is None:
            self.pool_ = [make_predictor(c) for c in names]
        self.models_ = []
        for m in self.pool_:
            try:
                with one_openmp_thread():  # after statsmodels, OpenMP threads in the booster's fit spin for seconds
                    m.fit(y, t0=self.t0_, slot_hours=self.slot_hours_)
            except PredictionError:
                m = None  # too little history for this one yet
            self.models_.append(m)
        self._forecast_all()

    def _value_at(self, p: int) -> float | None:
        i = p - self.t0_
        return float(self.y_[i]) if 0 <= i < self.y_.size else None

    def _score(self, p: int, actual: float, value_at) -> None:
        """Score every pending forecast whose target slot is p."""
        for h in range(1, int(self.max_horizon) + 1):
            made = self.pending_.get(p - h)
            if made is None:
                continue
            base = value_at(p - h)
            if base is None:
                continue
            pers = abs(actual - base)
            for k in range(len(self.record_)):
                f = made[k, h - 1]
                if np.isfinite(f):
                    self.record_[k][h - 1].append(abs(actual - f) - pers)
                    self.errors_[k][h - 1].append(actual - f)
        self.pending_.pop(p - int(self.max_horizon), None)

    def _forecast_all(self) -> None:
        H = int(self.max_horizon)
        out = np.full((len(self.models_), H), np.nan)
        for k, m in enumerate(self.models_):
            if m is not None:
                out[k] = m.predict(H)
        self.pending_[self.t0_ + self.y_.size - 1] = out

    def _update(self, y_new: np.ndarray) -> None:
        first = self.t0_ + self.y_.size - y_new.size
        for j, p in enumerate(range(first, first + y_new.size)):
            self._score(p, float(y_new[j]), self._value_at)
            for m in self.models_:
                if m is not None:
                    m.update(y_new[j:j + 1])
            self.seen_ = p
            if j == y_new.size - 1:
                self._forecast_all()

    # -------------------------------------------------------------------------------------- predict

    def chosen(self) -> list[str]:
        """The model used at each horizon 1..max_horizon right now ('persistence' if none has earned it)."""
        names = self._names()
        return [names[k] if k >= 0 else "persistence" for k in self._choice()]

    def _choice(self) -> np.ndarray:
        H = int(self.max_horizon)
        pick = np.full(H, -1)
        for h in range(1, H + 1):
            best, best_mean = -1, 0.0
            for k, rec in enumerate(self.record_):
                d = np.fromiter(rec[h - 1], dtype=float)
                if d.size < self.min_scored:
                    continue
                m = d.mean()
                if m < best_mean and _beats(d, h, self.z):
                    best, best_mean = k, m
            pick[h - 1] = best
        return pick

    def _predict(self, w: int) -> np.ndarray:
        last = self.y_[-1]
        out = np.full(w, last)
        made = self.pending_.get(self.t0_ + self.y_.size - 1)
        if made is None:
            return out
        for h, k in enumerate(self._choice()[:w], start=1):
            if k >= 0 and np.isfinite(made[k, h - 1]):
                out[h - 1] = made[k, h - 1]
        return out

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        pers = persistence_errors(self.y_, w)
        pick = self._choice()
        out = []
        for h in range(1, w + 1):
            k = pick[h - 1] if h <= pick.size else -1
            e = np.fromiter(self.errors_[k][h - 1], dtype=float) if k >= 0 else np.empty(0)
            out.append(e if e.size >= MIN_RESIDUALS else pers[h - 1])
        return out


def _beats(d: np.ndarray, h: int, z: float) -> bool:
    """Mean paired difference below zero by `z` block standard errors (blocks of max(h, 6) origins)."""
    L = max(h, 6)
    nb = d.size // L
    if nb < 2:
        return False
    blocks = d[d.size - nb * L:].reshape(nb, L).mean(axis=1)
    se = blocks.std(ddof=1) / np.sqrt(nb)
    return bool(d.mean() + z * se < 0)
