"""A seeded synthetic spot market: daily cycle plus autocorrelated noise (SPEC §3.1, ours).

Real traces are few; sweeps and property tests need markets with known structure. Availability
follows a daily cycle (busy in the afternoon) and an AR(1) shock, and is rounded to whole GPUs in
0..requested; the spot price follows its own daily cycle and AR(1) shock, moves against
availability (scarce spot is dearer), and stays within [floor, cap] x on-demand price.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import TraceError
from .market import MAX_SLOTS, Market


@dataclass(frozen=True)
class Regime:
    """Parameters of one market regime (all fractions are relative)."""

    mean_avail: float  # mean fraction of the requested GPUs obtainable
    daily_avail: float  # amplitude of the daily cycle of that fraction
    noise_avail: float  # std of the AR(1) shock of that fraction
    ar_avail: float  # AR(1) coefficient per hour
    mean_price: float  # mean spot price as a fraction of on-demand
    daily_price: float
    noise_price: float
    ar_price: float
    coupling: float  # price rise per unit of missing availability fraction


REGIMES: dict[str, Regime] = {
    "calm": Regime(0.85, 0.08, 0.05, 0.95, 0.30, 0.03, 0.01, 0.97, 0.05),
    "default": Regime(0.65, 0.20, 0.15, 0.90, 0.35, 0.08, 0.04, 0.95, 0.15),
    "volatile": Regime(0.45, 0.30, 0.35, 0.75, 0.45, 0.15, 0.12, 0.85, 0.35),
}


def synthetic_market(
    hours: float,
    slot_hours: float = 1.0,
    requested: int = 8,
    od_price: float = 3.0,
    regime: str | Regime = "default",
    seed: int = 0,
    start: str | pd.Timestamp = "2025-01-01T00:00Z",
    price_floor: float = 0.1,
    price_cap: float = 1.0,
) -> Market:
    """A `Market` of `hours / slot_hours` slots; the same arguments always give the same market."""
    if isinstance(regime, str):
        if regime not in REGIMES:
            raise TraceError(f"unknown regime {regime!r}; use one of {', '.join(REGIMES)}")
        name, reg = regime, REGIMES[regime]
    else:
        name, reg = "custom", regime
    for label, v in (("hours", hours), ("slot_hours", slot_hours), ("requested", requested), ("od_price", od_price),
                     ("seed", seed)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(v):
            raise TraceError(f"synthetic market: {label} must be a finite number, got {v!r}")
    if not (hours > 0 and slot_hours > 0 and requested >= 1 and od_price > 0):
        raise TraceError(f"synthetic market needs hours > 0, slot_hours > 0, requested >= 1 and od_price > 0 (got "
                         f"hours={hours!r}, slot_hours={slot_hours!r}, requested={requested!r}, od_price={od_price!r})")
    if hours / slot_hours > MAX_SLOTS:
        raise TraceError(f"synthetic market: {hours:g} h of {slot_hours:g}-h slots is {hours / slot_hours:.3g} slots, "
                         f"more than the {MAX_SLOTS:.0e} a market may hold")
    if seed < 0 or seed != int(seed):
        raise TraceError(f"synthetic market: seed must be a whole number >= 0, got {seed!r}")
    n = int(np.floor(hours / slot_hours + 1e-9))
    if n < 1:
        raise TraceError(f"{hours} h is shorter than one slot of {slot_hours} h")
    rng = np.random.default_rng(seed)
    t = np.arange(n) * slot_hours
    start = pd.Timestamp(start)
    hour_of_day = (start.hour + start.minute / 60 + t) % 24
    cycle = np.cos(2 * np.pi * (hour_of_day - 15) / 24)  # +1 at 15:00, the busiest hour

    def ar1(coef_per_hour: float, std: float) -> np.ndarray:
        phi = coef_per_hour ** slot_hours
        eps = rng.normal(0.0, std * np.sqrt(1 - phi**2), n)
        x = np.empty(n)
        x[0] = rng.normal(0.0, std)
        for i in range(1, n):
            x[i] = phi * x[i - 1] + eps[i]
        return x

    frac = reg.mean_avail - reg.daily_avail * cycle + ar1(reg.ar_avail, reg.noise_avail)
    frac = np.clip(frac, 0.0, 1.0)
    avail = np.floor(frac * requested + rng.uniform(0, 1, n)).clip(0, requested).astype(np.int64)
    price = reg.mean_price + reg.daily_price * cycle + ar1(reg.ar_price, reg.noise_price)
    price = price + reg.coupling * (1.0 - avail / requested - (1 - reg.mean_avail))
    price = np.clip(price, price_floor, price_cap) * od_price
    return Market(
        avail=avail, spot_price=np.round(price, 4), od_price=np.full(n, float(od_price)), slot_hours=slot_hours,
        requested=requested, start=start, name=f"synthetic-{name}-seed{seed}",
        meta={"regime": name, "seed": seed, "generator": "spotlab.synthetic_market"},
    )
