"""The front door to market data: `load_market` reads any trace format or a named market, and applies the
price assumptions a run needs, in one place for the command line, the notebooks, the experiments and sweeps.

The format is found from the file, never from its name: a marketplace JSONL file (its first line is a
snapshot), a sky_spot JSON trace (a JSON object) or a tidy CSV. Prices given here (a constant spot or
on-demand price, or spot as a share of on-demand) are checked as strictly as the prices in a file, so a
number means the same wherever it is given. What `load_market` returns is cut into the windows a run
simulates by `spotlab.market.windows.cut_windows`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import ArgumentError, TraceError
from .market import MAX_PRICE, Market, Observations
from .marketplace import (
    is_marketplace_file,
    load_marketplace_observations,
    marketplace_zones,
)
from .named import MARKET_SPECS
from .sky_spot import is_json_trace, load_sky_spot_observations
from ..text_files import TRACE_FILE
from .tidy_csv import load_tidy_observations, read_tidy_csv

FORMATS = ("tidy", "sky_spot", "marketplace")
FORMAT_NAMES = {"tidy": "tidy market CSV", "sky_spot": "sky_spot JSON trace", "marketplace": "marketplace JSONL file"}
SYNTHETIC_HOURS = 24 * 21  # a named synthetic market's length unless `hours` says otherwise


def trace_format(path: str | Path) -> str:
    """"marketplace", "sky_spot" or "tidy", read from the file's content."""
    if is_marketplace_file(path):
        return "marketplace"
    return "sky_spot" if is_json_trace(path) else "tidy"


def load_observations(path: str | Path, zone: str | None = None, convention: str | None = None,
                      requested: int | None = None) -> Observations:
    """The raw observations of one zone of a trace of any format. A sky_spot trace is one zone, read by its
    `convention` (default "preempted"), which no other format has; a marketplace file's zone is a provider or
    "all" (its default), holding `requested` GPUs (default 8)."""
    fmt = trace_format(path)
    if convention is not None and fmt != "sky_spot":
        raise TraceError(f"{path} is a {FORMAT_NAMES[fmt]}; a JSON convention (--json-convention, convention=) "
                         "applies to sky_spot JSON traces only")
    if fmt == "marketplace":
        return load_marketplace_observations(path, "all" if zone is None else zone,
                                             requested=8 if requested is None else requested)
    if fmt == "sky_spot":
        if zone is not None:
            raise TraceError(f"{path} is a sky_spot JSON trace of one zone; a zone (--zone, zone=) applies to "
                             "tidy CSVs and marketplace files")
        return load_sky_spot_observations(path, convention or "preempted", requested)
    if requested is not None:
        raise TraceError(f"{path}: a tidy CSV states how many GPUs were requested; `requested` applies to "
                         "sky_spot and marketplace traces")
    return load_tidy_observations(path, zone)


def trace_zones(path: str | Path) -> list[str]:
    """The zones of a trace, in file order: a tidy CSV's zones, a marketplace file's "all" and then its
    providers, a sky_spot trace's one (its file name)."""
    fmt = trace_format(path)
    if fmt == "marketplace":
        return marketplace_zones(path)
    if fmt == "sky_spot":
        return [Path(path).name.removesuffix(".json")]
    return list(dict.fromkeys(read_tidy_csv(path)["zone"]))


def _load_trace(path: str | Path, zone: str | None = None, slot_hours: float | None = None,
               convention: str | None = None, requested: int | None = None) -> Market:
    """One zone of a trace file of any format on a grid of `slot_hours` (default: its native step), as it is:
    no price assumed. `market.meta["format"]` says which format it was."""
    market = load_observations(path, zone, convention, requested).to_market(slot_hours)
    return replace(market, meta={**market.meta, "format": trace_format(path)})


def load_market(source: str | Path, *, zone: str | None = None, slot_hours: float | None = None,
                convention: str | None = None, requested: int | None = None, spot_price: float | None = None,
                od_price: float | None = None, spot_share: float | None = None, hours: float | None = None,
                seed: int = 0) -> Market:
    """A market from `source`: a named market (a key of `MARKET_SPECS`: the notebooks' traces with their
    stated price assumptions, and the synthetic regimes, `hours` long and seeded by `seed`, which a trace
    ignores) or a trace file of any format (`"PATH#ZONE"` names one zone of a file with several).

    Prices: `od_price` and `spot_price` replace the trace's with a constant (USD per GPU-hour); `spot_share`
    makes spot that share of the on-demand price, slot by slot, for traces without spot prices. A trace that
    still lacks a price can be loaded (forecasting availability needs none), and cutting it into windows to
    simulate says which price is missing.
    """
    _check_prices(spot_price, od_price, spot_share)
    if slot_hours is not None and (isinstance(slot_hours, bool) or not isinstance(slot_hours, (int, float, np.number))
                                   or not math.isfinite(slot_hours) or slot_hours <= 0):
        raise TraceError(f"slot_hours must be a finite number of hours > 0, got {slot_hours!r}")
    if requested is not None and (isinstance(requested, bool) or not isinstance(requested, (int, np.integer))
                                  or requested < 1):
        raise TraceError(f"requested must be a whole number of GPUs >= 1, got {requested!r}")
    if not isinstance(source, (str, Path)):
        raise ArgumentError(f"source must be a trace path or a named market ({', '.join(MARKET_SPECS)}), got "
                            f"{type(source).__name__} {source!r}")
    if not str(source):
        raise TraceError("source is an empty path; give a trace file or a named market")
    key = str(source)
    if key in MARKET_SPECS and not Path(key).exists():
        market = _named_market(key, slot_hours, SYNTHETIC_HOURS if hours is None else hours, seed, zone,
                               convention, requested)
    else:
        path, _, zone_in_key = key.partition("#")
        if zone is not None and zone_in_key and zone != zone_in_key:
            raise TraceError(f"{source}: the zone is given twice ({zone_in_key!r} in the path, {zone!r} as zone)")
        if not Path(path).exists():
            if Path(path).suffix or "/" in path or "\\" in path:
                raise TraceError(f"{path}: no such file; expected {TRACE_FILE}")
            raise TraceError(f"unknown market {key!r}: neither a named market ({', '.join(MARKET_SPECS)}) "
                             "nor a trace file (tidy CSV, sky_spot JSON or marketplace JSONL; 'PATH#ZONE' for "
                             "one zone of a file with several)")
        market = _load_trace(path, zone or zone_in_key or None, slot_hours, convention, requested)
    return assume_prices(market, spot_price, od_price, spot_share)


def assume_prices(market: Market, spot_price: float | None = None, od_price: float | None = None,
                  spot_share: float | None = None) -> Market:
    """`market` with the prices a user states: constant on-demand / spot prices, or spot as a share of
    on-demand (after the on-demand price given here, if any)."""
    _check_prices(spot_price, od_price, spot_share)
    if spot_price is None and od_price is None and spot_share is None:
        return market
    od = market.od_price if od_price is None else np.full(len(market), float(od_price))
    if spot_share is not None:
        if not np.all(np.isfinite(od)):
            raise TraceError(f"{market.name}: the trace has no on-demand price for some slots, so spot cannot be a "
                             "share of it; give the on-demand price (CLI: --on-demand-price, Python: od_price=)")
        spot = spot_share * od
    else:
        spot = market.spot_price if spot_price is None else np.full(len(market), float(spot_price))
    return replace(market, spot_price=spot, od_price=od)


def _check_prices(spot_price, od_price, spot_share) -> None:
    for name, value, low in (("spot_price", spot_price, 0.0), ("od_price", od_price, None),
                             ("spot_share", spot_share, None)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not math.isfinite(value):
            raise TraceError(f"{name} must be a finite number, got {value!r}")
        if low is None and value <= 0:
            raise TraceError(f"{name} must be > 0, got {value!r}")
        if low is not None and value < low:
            raise TraceError(f"{name} must be >= 0, got {value!r}")
        if name != "spot_share" and value > MAX_PRICE:
            raise TraceError(f"{name} must be at most {MAX_PRICE:g} USD per GPU-hour, got {value!r}")
    if spot_price is not None and spot_share is not None:
        raise TraceError("give either a spot price or a spot share of the on-demand price, not both")


def _named_market(key: str, slot_hours: float | None, hours: float, seed: int, zone: str | None,
                  convention: str | None, requested: int | None) -> Market:
    """A named market on a grid of `slot_hours` (default 1 h for the synthetic ones, the native step for the
    traces), with its spec's price assumption and where its jobs start (`skip_hours`) in its meta."""
    from ..data.locate import dataset_path  # the download machinery, only for a named market
    from .synthetic import synthetic_market  # pandas, only for a synthetic one

    spec = MARKET_SPECS[key]
    if spec.relpath is None:
        given = [name for name, v in (("zone", zone), ("convention", convention), ("requested", requested))
                 if v is not None]
        if given:
            raise TraceError(f"market {key!r} is synthetic (8 GPUs requested, one zone): {', '.join(given)} does not "
                             "apply to it")
        market = synthetic_market(hours, slot_hours=1.0 if slot_hours is None else slot_hours, requested=8,
                                  od_price=3.0, regime=spec.regime, seed=seed)
        return replace(market, meta={**market.meta, "format": "synthetic", "market_key": key})
    market = _load_trace(dataset_path(spec.relpath), zone or spec.zone, slot_hours, convention, requested)
    if spec.last_hours is not None and len(market) * market.slot_hours > spec.last_hours:
        market = market.window(len(market) - int(round(spec.last_hours / market.slot_hours)), len(market))
    if spec.spot_share is not None:
        od = spec.od_price if spec.od_price is not None else float(np.nanmedian(market.od_price))
        market = market.with_prices(spec.spot_share * od, od)
    meta = {**market.meta, "market_key": key}
    if spec.skip_hours is not None:
        meta["skip_hours"] = spec.skip_hours
    return replace(market, meta=meta)
