"""Descriptive statistics of real spot markets (SPEC §7 item 2), as tidy tables for notebook 01.

Every function takes markets keyed by a label (usually the zone) and returns a long DataFrame, so a
figure is a one-line seaborn call and the CSV saved next to it holds exactly the plotted numbers.
Availability is judged on the slot grid of the `Market` (minimum over the slot), i.e. what a
scheduler with that slot length can rely on, not what a single probe saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.locate import dataset_path
from ..errors import TraceError
from ..market.load import load_market, trace_zones
from ..market.market import Market


@dataclass(frozen=True)
class MarketFile:
    """One tidy file of `markets/`; `real_clock` is False where timestamps start at a conventional origin,
    which makes hour-of-day statistics meaningless for it."""

    relpath: str
    title: str
    real_clock: bool
    has_spot_price: bool
    zones: tuple[str, ...] | None = None  # the zones the notebooks use (None: every zone of the file)
    forecast_zones: tuple[str, ...] | None = None  # notebook 02's (None: `zones`), where forecasting is costly


MARKET_FILES: dict[str, MarketFile] = {
    "gcp_h100": MarketFile("markets/gcp_h100_probes.csv.gz", "GCP H100 (16 requested, 10 min probes)", True, True),
    "aws_v100": MarketFile("markets/aws_v100_p3.2xlarge.csv.gz", "AWS V100 p3.2xlarge (1 requested, ~195 s)", True, True),
    "aws_v100_16": MarketFile("markets/aws_v100_16node_counts.csv.gz", "AWS V100 (16 requested, 5 min)", False, False),
    "gcp_a100": MarketFile("markets/gcp_a100_counts.csv.gz", "GCP A100-40GB (4 requested, 150 s)", False, False),
    # A marketplace (spotlab.market.marketplace): the market-wide view and the two providers with flagged spot
    # offers, which come and go (the others list at one price, spot = on-demand: run time, no insight).
    "marketplace_h100": MarketFile("markets/gpu-price-tracker/H100_80GB_SXM5.jsonl.gz",
                                   "Marketplace H100 SXM5 (8 requested, ~30 min snapshots)", True, True,
                                   zones=("all", "primecompute", "datacrunch"), forecast_zones=("all",)),
}


def load_all_zones(
    relpath: str,
    slot_hours: float | None,
    zones: Sequence[str] | None = None,
    max_hours: float | None = None,
) -> dict[str, Market]:
    """Every zone (or the chosen `zones`) of a tidy file on one slot grid, so zones compare slot for slot.

    `relpath` is relative to the data folder (resolved by `spotlab.data.locate.dataset_path`); `max_hours`
    keeps only the first hours of each zone (quick runs).
    """
    path = dataset_path(relpath)
    present = trace_zones(path)
    if zones is None:  # a file's default zones (MarketFile.zones), else all
        zones = next((f.zones for f in MARKET_FILES.values() if f.relpath == relpath), None)
    wanted = present if zones is None else list(zones)
    missing = [z for z in wanted if z not in present]
    if missing:
        raise TraceError(f"{relpath}: no zone(s) {', '.join(missing)}; zones in the file: {', '.join(present)}")
    out: dict[str, Market] = {}
    for zone in wanted:
        m = load_market(path, zone=zone, slot_hours=slot_hours)
        if max_hours is not None:
            n = max(1, min(len(m), int(np.floor(max_hours / m.slot_hours + 1e-9))))
            m = m.window(0, n)
        out[zone] = m
    return out


def _hours(m: Market) -> np.ndarray:
    return np.arange(len(m)) * m.slot_hours


def availability_table(markets: Mapping[str, Market]) -> pd.DataFrame:
    """One row per (slot, zone): the raw series behind every over-time figure.

    `frac` = avail / requested puts zones probed with different request sizes on one scale;
    `hours` (since the zone's first slot) serves traces whose clock is only conventional.
    """
    parts = []
    for zone, m in markets.items():
        parts.append(
            pd.DataFrame(
                {
                    "time": m.times if m.times is not None else pd.NaT,
                    "hours": _hours(m),
                    "zone": zone,
                    "gpu": m.meta.get("gpu", ""),
                    "requested": m.requested,
                    "avail": m.avail,
                    "frac": m.avail / m.requested,
                    "spot_price": m.spot_price,
                    "od_price": m.od_price,
                }
            )
        )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def daily_profile(markets: Mapping[str, Market]) -> pd.DataFrame:
    """Mean availability fraction and spot price by UTC hour of day per zone: is there a daily cycle
    a forecaster (or a fixed schedule) could exploit? `count` = slots averaged, to judge the noise."""
    rows = []
    for zone, m in markets.items():
        if m.times is None:
            raise TraceError(f"{zone}: the market has no start time, so hours of day are undefined")
        df = pd.DataFrame({"hour": m.times.hour, "frac": m.avail / m.requested, "spot_price": m.spot_price})
        g = df.groupby("hour").agg(
            frac_mean=("frac", "mean"),
            frac_std=("frac", "std"),
            spot_price_mean=("spot_price", "mean"),
            count=("frac", "size"),
        )
        g.insert(0, "zone", zone)
        rows.append(g.reset_index())
    return pd.concat(rows, ignore_index=True)[
        ["zone", "hour", "frac_mean", "frac_std", "spot_price_mean", "count"]
    ]


def k_available_fraction(markets: Mapping[str, Market], ks: Sequence[int] | None = None) -> pd.DataFrame:
    """Share of slots with at least k spot GPUs, per zone and k: how large a spot-only job a zone can
    host and how often (default k = 1..requested of each zone)."""
    rows = []
    for zone, m in markets.items():
        kk = range(1, m.requested + 1) if ks is None else ks
        for k in kk:
            rows.append({"zone": zone, "k": int(k), "requested": m.requested,
                         "fraction": float(np.mean(m.avail >= k)), "slots": len(m)})
    return pd.DataFrame(rows, columns=["zone", "k", "requested", "fraction", "slots"])


def spells(markets: Mapping[str, Market], k: int = 1) -> pd.DataFrame:
    """Every maximal run of slots with >= k GPUs ("up") or < k ("down"), with its length in hours.

    `censored` marks the first and last run of a zone, cut by the trace's ends (their true length
    is unknown: at least what is shown).
    """
    rows = []
    for zone, m in markets.items():
        up = m.avail >= k
        change = np.flatnonzero(up[1:] != up[:-1]) + 1
        bounds = np.r_[0, change, len(up)]
        n = len(bounds) - 1
        for i in range(n):
            a, b = int(bounds[i]), int(bounds[i + 1])
            rows.append({"zone": zone, "state": "up" if up[a] else "down", "start_slot": a,
                         "hours": (b - a) * m.slot_hours, "censored": i == 0 or i == n - 1})
    return pd.DataFrame(rows, columns=["zone", "state", "start_slot", "hours", "censored"])


def spell_lengths(markets: Mapping[str, Market], k: int = 1, include_censored: bool = True) -> pd.DataFrame:
    """Lifetime ("up": >= k GPUs) and wait ("down": < k) statistics per zone, in hours.

    They say how long a spot allocation of k GPUs survives and how long one waits for it, which is
    what the restart overhead and the deadline slack are traded against. With the default
    (censored runs included, population std) the numbers match the Can't Be Late release's
    `ping_based__stats.tsv`. A state that never occurs in a zone gets count 0 and NaN statistics.
    """
    sp = spells(markets, k)
    if not include_censored:
        sp = sp[~sp["censored"]]
    rows = []
    for zone in markets:
        for state in ("up", "down"):
            h = sp.loc[(sp["zone"] == zone) & (sp["state"] == state), "hours"].to_numpy()
            stats = {"mean": np.nan, "std": np.nan, "min": np.nan, "p25": np.nan, "median": np.nan,
                     "p75": np.nan, "p90": np.nan, "max": np.nan}
            if h.size:
                q = np.percentile(h, [25, 50, 75, 90])
                stats = {"mean": h.mean(), "std": h.std(), "min": h.min(), "p25": q[0], "median": q[1],
                         "p75": q[2], "p90": q[3], "max": h.max()}
            rows.append({"zone": zone, "k": k, "state": state, **stats, "count": int(h.size),
                         "total_hours": float(h.sum())})
    return pd.DataFrame(rows)


def autocorrelation(markets: Mapping[str, Market], max_lag_hours: float = 24.0,
                    target: str = "availability") -> pd.DataFrame:
    """Autocorrelation of the availability fraction (or the spot price) vs lag (hours) per zone: how
    far ahead the current state is informative. Lags stop at half the series (beyond, too few pairs to
    mean anything). A constant series (never/always available, a list price) has no defined ACF and is
    left out, as are zones without a price when `target="price"`."""
    rows = []
    for zone, m in markets.items():
        if target == "price":
            if not m.has_spot_price:
                continue
            x = np.asarray(m.spot_price, dtype=float)
        else:
            x = m.avail / m.requested
        x = x - x.mean()
        var = float(np.dot(x, x))
        if var <= 1e-12 * max(1.0, x.size):
            continue
        n = len(x)
        for lag in range(0, min(n // 2, int(round(max_lag_hours / m.slot_hours))) + 1):
            rows.append({"zone": zone, "lag_hours": lag * m.slot_hours,
                         "acf": float(np.dot(x[: n - lag], x[lag:]) / var)})
    return pd.DataFrame(rows, columns=["zone", "lag_hours", "acf"])


def zone_summary(markets: Mapping[str, Market]) -> pd.DataFrame:
    """One line per zone (span, mean availability, how often any / all requested GPUs are available,
    mean prices): the table that tells which zones are worth scheduling on at all."""
    rows = []
    for zone, m in markets.items():
        rows.append({
            "zone": zone, "gpu": m.meta.get("gpu", ""), "requested": m.requested, "slots": len(m),
            "slot_hours": m.slot_hours, "span_hours": len(m) * m.slot_hours,
            "start": m.start, "mean_frac": float(np.mean(m.avail / m.requested)),
            "any_available": float(np.mean(m.avail >= 1)),
            "all_available": float(np.mean(m.avail >= m.requested)),
            "spot_price_mean": float(np.mean(m.spot_price)) if m.has_spot_price else np.nan,
            "od_price_mean": float(np.mean(m.od_price)) if m.has_od_price else np.nan,
        })
    return pd.DataFrame(rows)
