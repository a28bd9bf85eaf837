"""Forecasts of every zone of a `ZonedMarket` at once, as a (zones, w) array: what a plan across zones reads.

Each zone gets its own fitted model (zones differ: one grants for days, another drops every hour), fitted on the
zone's history up to and including slot `t` (the last `train_slots` of it; default everything since slot 0), through
the one `Forecaster` interface, so the numbers are the same as a rolling-origin evaluation's at origin `t`:
point forecasts clipped to the feasible range, or with `q` the values assured with probability q (GPUs one can
count on, a price not exceeded). With the default model, `spells`, the point forecast of a 0/requested zone is
requested x P(available at t+h); `spell_probabilities` gives P(available) and P(the current spell lasts).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PredictionError
from ..market.zones import ZonedMarket
from .evaluate import target_series
from .forecaster import Forecaster
from .registry import make_predictor
from .spells import Spells


def _history(market: ZonedMarket, i: int, t: int, target: str, train_slots: int | None) -> tuple[np.ndarray, int, Any]:
    if not isinstance(market, ZonedMarket):
        raise PredictionError(f"market must be a ZonedMarket (got {type(market).__name__})")
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 0 <= t < len(market):
        raise PredictionError(f"t must be a slot of the market, 0..{len(market) - 1} (got {t!r})")
    if train_slots is not None and (isinstance(train_slots, bool) or not isinstance(train_slots, (int, np.integer))
                                    or train_slots < 1):
        raise PredictionError(f"train_slots must be a whole number of slots >= 1 (got {train_slots!r})")
    s = target_series(market.zones[i], target)
    lo = 0 if train_slots is None else max(0, int(t) - int(train_slots) + 1)
    return s.values[lo:int(t) + 1], s.t0 + lo, s.requested


def forecast_zones(market: ZonedMarket, t: int, w: int, model: str = "spells", target: str = "availability",
                   q: float | None = None, train_slots: int | None = None, **params: Any) -> np.ndarray:
    """(zones, w): each zone's forecast of slots t+1..t+w from its history up to t (see the module doc)."""
    out = []
    for i in range(market.n):
        y, t0, requested = _history(market, i, t, target, train_slots)
        fc = Forecaster(make_predictor(model, **params), target, requested).fit(y, t0=t0, slot_hours=market.slot_hours)
        out.append(fc.predict(w) if q is None else fc.predict_quantile(w, q))
    return np.stack(out)


def spell_probabilities(market: ZonedMarket, t: int, w: int, train_slots: int | None = None,
                        **params: Any) -> tuple[np.ndarray, np.ndarray]:
    """(zones, w) each: P(available, at least one GPU, at t+h) and P(the spell under way at t lasts through t+h)."""
    p_up, lasts = [], []
    for i in range(market.n):
        y, t0, _ = _history(market, i, t, "availability", train_slots)
        m = make_predictor("spells", **params).fit(y, t0=t0, slot_hours=market.slot_hours)
        assert isinstance(m, Spells)
        p_up.append(m.p_available(w))
        lasts.append(m.p_spell_lasts(w))
    return np.stack(p_up), np.stack(lasts)
