"""A run-length-aware (semi-Markov) forecaster: what happens next depends on how long the current level has lasted.

Availability traces are step functions whose spells have characteristic lengths: a zone that drops to
zero for a few slots usually comes back, a long outage usually goes on. Persistence ignores this and is
the MAE-optimal forecast only while "no change by t+h" is more likely than not given nothing else; once
the time already spent in the current level is known, a change can become the likelier outcome.

From the training window, for every horizon h = 1..`max_horizon`, the model tabulates the change
y[s+h] - y[s] by (level bucket of y[s], run-length bucket of s), where the run length is the number of
slots since the level last changed (counted inside the history the model has seen, never beyond s).
The forecast is y[t] + the median change of the cell (MAE-optimal) when that median beats "no change"
in the cell by `z_cell` standard errors (a cell with a handful of 55/45 outcomes is noise), backing off to the level's cell
and then to no change when a cell has fewer than `min_count` examples. Levels are the values themselves
when there are at most `max_levels` of them (0/1 availability, GPU counts), else quantile bins (prices).
Run lengths are exact up to 12 slots, then geometric buckets (13-24, 25-48, ...).

The guard that keeps it from being worse than persistence: the tables are first built on the rows whose
targets fall in the first 1 - `valid_fraction` of the window and scored on the rest; at each horizon the
table is used only if it beats persistence there by `min_gain` and by `z_guard` block standard errors
(`persistence_guard`, the same test as `gbm`); elsewhere, and beyond `max_horizon`, the forecast is
persistence. Spot markets drift, so the check goes on after the fit: as outcomes arrive (`update`), the tables'
forecasts made at earlier origins are scored against persistence, and a horizon whose running score (kept
across refits of the same object) is worse than persistence's uses persistence. Quantiles come from the
validation errors of the forecast actually used.
"""

from __future__ import annotations

from numbers import Integral, Real
import numpy as np

from ..params import Interval
from .base import Predictor, persistence_errors
from .persistence_guard import beats_persistence


def run_lengths(y: np.ndarray) -> np.ndarray:
    """r[s] = slots since the level last changed, counting s itself (1 right after a change)."""
    n = y.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.ones(n, dtype=bool)
    change[1:] = y[1:] != y[:-1]
    idx = np.arange(n)
    last = np.maximum.accumulate(np.where(change, idx, 0))
    return idx - last + 1


EXACT_RUNS = 12  # run lengths up to this many slots get a bucket each; longer ones share geometric buckets


def run_bucket(r: np.ndarray | int) -> np.ndarray:
    """Run-length buckets: 1..12 slots exactly (short spells often have a typical length), then
    13-24, 25-48, 49-96, ... (long spells only need an order of magnitude)."""
    r = np.maximum(np.asarray(r, dtype=float), 1.0)
    geo = EXACT_RUNS + np.ceil(np.log2(np.maximum(r, EXACT_RUNS) / EXACT_RUNS))
    return np.where(r <= EXACT_RUNS, r - 1, geo - 1).astype(np.int64)


class Duration(Predictor):
    """Median change given (current level, time spent in it), per horizon, guarded against persistence."""

    name = "duration"

    def __init__(
        self,
        max_horizon: int = 24,
        max_levels: int = 32,
        level_bins: int = 4,
        max_run_bucket: int = 18,
        min_count: int = 20,
        valid_fraction: float = 0.4,
        min_gain: float = 0.0,
        z_guard: float = 1.0,
        z_cell: float = 2.0,
    ) -> None:
        self.max_horizon = max_horizon
        self.max_levels = max_levels
        self.level_bins = level_bins
        self.max_run_bucket = max_run_bucket
        self.min_count = min_count
        self.valid_fraction = valid_fraction
        self.min_gain = min_gain
        self.z_guard = z_guard
        self.z_cell = z_cell

    _parameter_constraints = {
        **{k: [Interval(Integral, 1, None)] for k in ("max_horizon", "max_levels", "level_bins", "max_run_bucket",
                                                     "min_count")},
        "valid_fraction": [Interval(Real, 0, 1, closed="neither")],
        "min_gain": [Interval(Real, 0, 1, closed="left")],
        "z_guard": [Interval(Real, 0, None)],
        "z_cell": [Interval(Real, 0, None)],
    }

    def min_history(self, slot_hours: float = 1.0) -> int:
        return 24

    # ------------------------------------------------------------------------------------- features

    def _levels(self, y: np.ndarray) -> np.ndarray:
        """Level bucket of each value: its index among the known levels, or its quantile bin."""
        if self.edges_ is None:
            return np.searchsorted(self.values_, y)  # unseen values land next to their neighbours
        return np.searchsorted(self.edges_, y, side="right")

    def _keys(self, level: np.ndarray, run: np.ndarray) -> np.ndarray:
        rb = np.minimum(run_bucket(run), self.max_run_bucket)
        return level * (self.max_run_bucket + 1) + rb

    def _tables(self, lv: np.ndarray, key: np.ndarray, d: np.ndarray) -> tuple[dict, dict]:
        """Median change per (level, run) cell and per level, for cells with at least min_count rows."""
        out = []
        for k in (key, lv):
            order = np.argsort(k, kind="stable")
            ks, ds = k[order], d[order]
            cuts = np.flatnonzero(np.diff(ks)) + 1
            table = {}
            for lo, hi in zip(np.r_[0, cuts], np.r_[cuts, ks.size]):
                if hi - lo < self.min_count:
                    continue
                cell = ds[lo:hi]
                m = float(np.median(cell))
                gain = np.abs(cell) - np.abs(cell - m)  # per row: how much the median beats "no change"
                sd = gain.std(ddof=1)
                if m != 0.0 and gain.mean() - self.z_cell * sd / np.sqrt(gain.size) > 0:
                    table[int(ks[lo])] = m
                elif m == 0.0 or sd == 0:
                    table[int(ks[lo])] = m if sd == 0 else 0.0
            out.append(table)
        return out[0], out[1]

    @staticmethod
    def _lookup(cell: dict, level: dict, key: np.ndarray, lv: np.ndarray) -> np.ndarray:
        return np.array([cell.get(int(k), level.get(int(v), 0.0)) for k, v in zip(key, lv)])

    # ------------------------------------------------------------------------------------------ fit

    def _fit(self, y: np.ndarray) -> None:
        values = np.unique(y)
        if values.size <= self.max_levels:
            self.values_, self.edges_ = values, None
        else:
            self.values_ = values
            self.edges_ = np.unique(np.quantile(y, np.linspace(0, 1, self.level_bins + 1)[1:-1]))
        n, H = y.size, int(self.max_horizon)
        run = run_lengths(y)
        lv = self._levels(y)
        key = self._keys(lv, run)
        split = n - max(1, int(round(self.valid_fraction * n)))
        self.use_ = np.zeros(H, dtype=bool)
        self.tables_: list[tuple[dict, dict]] = []
        self.residuals_: list[np.ndarray] = []
        for h in range(1, H + 1):
            if n - h < 1:
                self.tables_.append(({}, {}))
                self.residuals_.append(np.empty(0))
                continue
            s = np.arange(n - h)
            d = y[s + h] - y[s]
            early = s + h < split
            pers_err = d[~early]
            resid = pers_err
            if early.sum() >= self.min_count and (~early).sum() > 0:
                cell, level = self._tables(lv[s[early]], key[s[early]], d[early])
                model_err = d[~early] - self._lookup(cell, level, key[s[~early]], lv[s[~early]])
                self.use_[h - 1] = beats_persistence(model_err, pers_err, _mae, h, self.min_gain, self.z_guard)
                if self.use_[h - 1]:
                    resid = model_err
            self.residuals_.append(resid)
            self.tables_.append(self._tables(lv[s], key[s], d) if self.use_[h - 1] else ({}, {}))
        self.run_ = int(run[-1])
        # Track record per horizon, sum of |tables' error| - |persistence error| over the forecasts scored so
        # far; it survives refits of the same object (a rolling evaluation), since a market that defeated
        # the tables last week will likely defeat the new ones too.
        prev = getattr(self, "online_", None)
        self.online_ = prev if prev is not None and prev.size == H else np.zeros(H)
        self.pending_ = {n - 1: self._changes(y[-1], self.run_)}

    def _changes(self, last: float, run: int) -> np.ndarray:
        """The tables' forecast change per horizon at an origin (0 where a horizon is not used)."""
        lv = self._levels(np.array([last]))
        k, v = int(self._keys(lv, np.array([run]))[0]), int(lv[0])
        return np.array([cell.get(k, level.get(v, 0.0)) if use else 0.0
                         for use, (cell, level) in zip(self.use_, self.tables_)])

    def _update(self, y_new: np.ndarray) -> None:
        y, H = self.y_, int(self.max_horizon)
        first = y.size - y_new.size
        for p in range(first, y.size):
            self.run_ = self.run_ + 1 if y[p] == y[p - 1] else 1
            for h in range(1, H + 1):
                made = self.pending_.get(p - h)
                if made is not None and made[h - 1] != 0.0:
                    actual = y[p] - y[p - h]
                    self.online_[h - 1] += abs(actual - made[h - 1]) - abs(actual)
            self.pending_.pop(p - H, None)
            if self.use_.any():
                self.pending_[p] = self._changes(y[p], self.run_)

    def _predict(self, w: int) -> np.ndarray:
        last = self.y_[-1]
        out = np.full(w, last)
        if not self.use_.any():
            return out
        H = min(w, int(self.max_horizon))
        change = self.pending_.get(self.y_.size - 1)
        if change is None:
            change = self._changes(last, self.run_)
        out[:H] += np.where(self.online_[:H] <= 0, change[:H], 0.0)
        return out

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        H = len(self.residuals_)
        pers = persistence_errors(self.y_, w)
        return [self.residuals_[h - 1] if h <= H and self.residuals_[h - 1].size else pers[h - 1]
                for h in range(1, w + 1)]


def _mae(e: np.ndarray) -> float:
    return float(np.mean(np.abs(e)))
