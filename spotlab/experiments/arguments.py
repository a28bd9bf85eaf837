"""The arguments every experiment function takes, checked in one place: a market given by name, path or `Market`,
the job spec, positive numbers, job counts and seeds. A bad one is a `SpotlabError` naming it, before any work."""

from __future__ import annotations

import math

import numpy as np

from ..errors import TraceError
from ..market.load import load_market
from ..market.market import Market
from ..market.named import MARKET_SPECS
from . import setups


def resolve_market(market: str | Market, slot_hours: float, hours: float, market_seed: int,
                    od_price: float | None = None, spot_share: float | None = None) -> tuple[str, Market]:
    if isinstance(market, Market):
        return market.name, market
    if isinstance(market, str):
        return market, load_market(market, slot_hours=slot_hours, hours=hours, seed=market_seed, od_price=od_price,
                                   spot_share=spot_share)
    raise TraceError(f"a market is a named market ({', '.join(MARKET_SPECS)}), a trace path or a Market, got "
                     f"{type(market).__name__}")


def check_spec(spec: setups.JobSpec | None) -> setups.JobSpec:
    if spec is None:
        return setups.JobSpec()
    if not isinstance(spec, setups.JobSpec):
        raise TraceError(f"spec must be a setups.JobSpec, got {type(spec).__name__}")
    return spec


def check_positive(value, what: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    if not ok or not math.isfinite(float(value)) or float(value) <= 0:
        raise TraceError(f"{what} must be a positive number, got {value!r}")


def check_max_jobs(max_jobs) -> None:
    if max_jobs is None:
        return
    if isinstance(max_jobs, bool) or not isinstance(max_jobs, (int, np.integer)) or max_jobs < 1:
        raise TraceError(f"max_jobs must be a whole number >= 1 or None, got {max_jobs!r}")

