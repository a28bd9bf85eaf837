"""A spot market seen through one zone and GPU type, on a regular slot grid (SPEC §2, §3.1).

`Market` is what the simulator, the optimum and the predictors consume: per slot the spot price,
the spot GPUs one can hold, and the on-demand price. Raw observations (irregular probe times) are
turned into a `Market` by `resample`: availability is the *minimum* over the slot (a GPU must
survive the whole slot) and price the *time-weighted mean* (what a slot would have cost).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TraceError

if TYPE_CHECKING:
    import pandas as pd

MAX_PRICE = 1e9  # USD per GPU-hour: beyond this a run's cost can overflow to inf, so no source may state more
MAX_COUNT = 10**9  # GPUs requested or available in a trace: more is a typo (and overflows a count's sums)
MAX_SLOTS = 10_000_000  # slots of one market: more (a tiny slot length on a long trace) would not fit in memory


@dataclass(frozen=True, eq=False)
class Market:
    """Spot availability and prices on a regular grid of `slot_hours`-long slots.

    `avail[t]` is how many spot GPUs can be held during slot t (0..requested), `spot_price[t]` and
    `od_price[t]` are USD per GPU-hour (NaN spot price = the source has none). `start` is the
    wall-clock time of slot 0 when known (UTC).
    """

    avail: np.ndarray
    spot_price: np.ndarray
    od_price: np.ndarray
    slot_hours: float
    requested: int = 1
    start: pd.Timestamp | None = None
    name: str = "market"
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        avail = np.asarray(self.avail)
        n = avail.shape[0] if avail.ndim == 1 else -1
        if n <= 0:
            raise TraceError(f"{self.name}: a market needs a non-empty 1-D availability series")
        sp = np.broadcast_to(np.asarray(self.spot_price, dtype=float), (n,)).copy()
        od = np.broadcast_to(np.asarray(self.od_price, dtype=float), (n,)).copy()
        if not np.issubdtype(avail.dtype, np.integer):
            if np.any(~np.isfinite(avail)) or np.any(avail != np.round(avail)):
                raise TraceError(f"{self.name}: availability must be whole numbers of GPUs")
            avail = avail.astype(np.int64)
        if np.any(avail < 0) or np.any(avail > self.requested):
            bad = int(np.flatnonzero((avail < 0) | (avail > self.requested))[0])
            raise TraceError(f"{self.name}: slot {bad}: availability {avail[bad]} outside 0..{self.requested} (requested)")
        for label, arr in (("spot", sp), ("on-demand", od)):
            if np.any(arr[np.isfinite(arr)] < 0):
                bad = int(np.flatnonzero(np.isfinite(arr) & (arr < 0))[0])
                raise TraceError(f"{self.name}: slot {bad}: negative {label} price {arr[bad]}")
            if np.any(np.isinf(arr)) or np.any(arr[np.isfinite(arr)] > MAX_PRICE):
                bad = int(np.flatnonzero(np.isinf(arr) | (np.nan_to_num(arr) > MAX_PRICE))[0])
                raise TraceError(f"{self.name}: slot {bad}: {label} price {arr[bad]:g} is above {MAX_PRICE:g} USD "
                                 "per GPU-hour")
        if not (np.isfinite(self.slot_hours) and self.slot_hours > 0):
            raise TraceError(f"{self.name}: slot length must be > 0 hours (got {self.slot_hours})")
        for arr in (avail, sp, od):
            arr.setflags(write=False)
        object.__setattr__(self, "avail", avail)
        object.__setattr__(self, "spot_price", sp)
        object.__setattr__(self, "od_price", od)

    def __len__(self) -> int:
        return int(self.avail.shape[0])

    @property
    def has_spot_price(self) -> bool:
        return bool(np.all(np.isfinite(self.spot_price)))

    @property
    def has_od_price(self) -> bool:
        return bool(np.all(np.isfinite(self.od_price)))

    @property
    def times(self) -> pd.DatetimeIndex | None:
        import pandas as pd
        if self.start is None:
            return None
        return self.start + pd.to_timedelta(np.arange(len(self)) * self.slot_hours, unit="h")

    def with_prices(self, spot_price: float | None = None, od_price: float | None = None) -> "Market":
        """Override prices (e.g. the constant prices of a published experiment)."""
        kw = {}
        if spot_price is not None:
            kw["spot_price"] = np.full(len(self), float(spot_price))
        if od_price is not None:
            kw["od_price"] = np.full(len(self), float(od_price))
        return replace(self, **kw)

    def window(self, start: int, stop: int) -> "Market":
        """Slots `[start, stop)` as a market of their own (slot 0 = `start`)."""
        if not (0 <= start < stop <= len(self)):
            raise TraceError(f"{self.name}: window [{start}, {stop}) outside the trace's 0..{len(self)} slots")
        new_start = None if self.start is None else self.start + timedelta(hours=start * self.slot_hours)
        return replace(
            self,
            avail=self.avail[start:stop],
            spot_price=self.spot_price[start:stop],
            od_price=self.od_price[start:stop],
            start=new_start,
            name=f"{self.name}[{start}:{stop}]",
            meta={**{k: v for k, v in self.meta.items() if k != "native_ticks"},
                  "offset_slots": self.meta.get("offset_slots", 0) + start},
        )


@dataclass(frozen=True)
class Observations:
    """Raw, possibly irregular observations of one zone, before they are put on a slot grid."""

    seconds: np.ndarray  # observation times, seconds from `origin`, strictly increasing
    avail: np.ndarray
    spot_price: np.ndarray
    od_price: np.ndarray
    requested: int
    origin: pd.Timestamp | None
    name: str
    step_seconds: float | None = None  # nominal spacing when the source states it
    meta: dict = field(default_factory=dict)

    def native_step(self) -> float:
        if self.step_seconds:
            return float(self.step_seconds)
        if len(self.seconds) < 2:
            raise TraceError(f"{self.name}: one observation only; the slot length cannot be inferred")
        return float(np.median(np.diff(self.seconds)))

    def to_market(self, slot_hours: float | None = None) -> Market:
        """Put the observations on a grid of `slot_hours` (default: the native step)."""
        return resample(self, slot_hours)


def resample(obs: Observations, slot_hours: float | None = None) -> Market:
    """Resample to a regular grid: availability = min over each slot, price = time-weighted mean.

    Each observation holds from its time until the next one (the last holds for one native step).
    Slots start at the first observation and only slots fully covered by the data are kept.
    """
    step = obs.native_step()
    slot_s = step if slot_hours is None else float(slot_hours) * 3600.0
    if not (np.isfinite(slot_s) and slot_s > 0):
        raise TraceError(f"{obs.name}: slot length must be > 0 hours (got {slot_hours})")
    t = np.asarray(obs.seconds, dtype=float) - float(obs.seconds[0])
    ends = np.append(t[1:], t[-1] + step)
    total = ends[-1]
    if total / slot_s > MAX_SLOTS:
        raise TraceError(f"{obs.name}: slots of {slot_s / 3600:g} h cut the trace's {total / 3600:g} h into "
                         f"{total / slot_s:.3g} slots, more than the {MAX_SLOTS:.0e} a market may hold; give a "
                         "longer slot (CLI: --slot-hours, Python: slot_hours=)")
    n_slots = int(np.floor(total / slot_s + 1e-9))
    if n_slots < 1:
        raise TraceError(
            f"{obs.name}: the trace covers {total / 3600:.3f} h, shorter than one slot of {slot_s / 3600:g} h"
        )
    bounds = np.arange(n_slots + 1) * slot_s
    # Availability: min over the observations whose holding interval overlaps each slot.
    first = np.searchsorted(ends, bounds[:-1], side="right")  # segment containing slot start
    last = np.searchsorted(t, bounds[1:], side="left") - 1  # last segment starting before slot end
    last = np.maximum(last, first)
    av = np.asarray(obs.avail)
    prefix_ok = _exact_native(t, slot_s, step)
    if prefix_ok:
        k = int(round(slot_s / step))
        avail = av[: n_slots * k].reshape(n_slots, k).min(axis=1)
    else:
        avail = np.array([av[a : b + 1].min() for a, b in zip(first, last)])

    def weighted(values: np.ndarray) -> np.ndarray:
        vals = np.asarray(values, dtype=float)
        if not np.any(np.isfinite(vals)):
            return np.full(n_slots, np.nan)
        cum = np.concatenate([[0.0], np.cumsum(vals * (ends - t))])
        knots = np.concatenate([t, [ends[-1]]])
        integral = np.interp(bounds, knots, cum)
        return np.diff(integral) / slot_s

    return Market(
        avail=avail.astype(np.int64),
        spot_price=weighted(obs.spot_price),
        od_price=weighted(obs.od_price),
        slot_hours=slot_s / 3600.0,
        requested=int(obs.requested),
        start=obs.origin + timedelta(seconds=float(obs.seconds[0])) if obs.origin is not None else None,
        name=obs.name,
        meta=dict(obs.meta, native_step_seconds=step, native_ticks=len(obs.seconds)),
    )


def _exact_native(t: np.ndarray, slot_s: float, step: float) -> bool:
    """True when observations are exactly regular and a slot is a whole number of them (fast path)."""
    k = slot_s / step
    if abs(k - round(k)) > 1e-9 or round(k) < 1:
        return False
    return bool(np.allclose(np.diff(t), step, rtol=0, atol=1e-6)) if len(t) > 1 else True
