"""A GPU-cloud marketplace (gpu-price-tracker snapshots) seen as a spot market (SPEC §2, §3.1).

The source (``markets/gpu-price-tracker/``, MIT licence, see its README) is one JSON object per line: a
snapshot, every ~30 min, of Prime Intellect's aggregated listing of about a dozen clouds for one GPU type,
with price percentiles over all listed configurations (``price_stats``), the number of listed
configurations (``availability.total``), per provider the number of its listings and their min / mean price
(``by_provider``), and per configuration size ("1x", "8x", ...) the number of listings, min / mean price per
GPU and the provider of the cheapest one, flagged ``spot`` when that offer is interruptible (``by_config``).
Spot and on-demand offers are mixed in these summaries, so turning them into SPEC §2's market (spot price
``p_t``, spot GPUs ``a_t`` one can hold, on-demand price ``p_o``) is a modelling choice. Ours:

- Zones: ``"all"`` (the market-wide view: a user renting wherever it is cheapest) or one provider
  (``"datacrunch"``, ``"runpod"``, ...; `marketplace_zones` lists them).
- On-demand price: the **median** listed price per GPU-hour (``price_stats.median``); for a provider its
  **mean** (``by_provider.avg``; the summaries give no per-provider median). The typical listing is what one
  pays for a GPU that is not taken away; it is carried per slot.
- Spot price (``spot=``): ``"flagged"`` (default) the cheapest offer flagged interruptible where the snapshot
  has one, else the **cheapest decile** (``p10``) for ``"all"`` and the provider's ``min`` for a provider;
  ``"p10"``, ``"p25"`` (``"all"`` only), ``"min"``: that statistic always. Capped at the on-demand price of the
  same snapshot (nobody pays more for an interruptible GPU than for a guaranteed one).
- Spot GPUs (``capacity=``), capped at ``requested`` (default 8 = the jobs' N_max): ``"tier"`` (default) the
  GPUs listed **at the spot price** (within ``tier_tol``, default 5%; a size counts once, or ``size × count``
  when its mean is that cheap too; with a flagged price only flagged offers), the count the price belongs to;
  ``"gpus"`` every GPU listed at any price; ``"offers"`` listed configurations. For a provider these are lower
  bounds (``by_config`` names only each size's cheapest provider). A provider absent from a snapshot has 0 GPUs
  there and its prices carry over from its previous (else first) snapshot, so a price is never undefined.
- Gaps between snapshots (up to 5.6 h): every observation holds until the next, so on a slot grid availability
  is the minimum over the slot and prices the time-weighted mean (`spotlab.market`). ``gaps="hold"`` (default)
  lets the last snapshot hold through a gap, as for every other trace; ``gaps="unavailable"`` holds it for at
  most ``max_gap_hours`` (default 1 h) and leaves the rest of a longer gap without spot GPUs (prices held).
  Either way the gaps are counted in ``Market.meta`` (``gaps_over_max``, ``gap_hours``).

Why each choice, the alternatives and the figures of the four published files (spot/on-demand ratios, gaps):
docs/decisions/marketplace-mapping.md.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TraceError
from ..text_files import read_text
from .market import MAX_PRICE, Market, Observations

if TYPE_CHECKING:
    import pandas as pd

ALL = "all"
SPOT_RULES = ("flagged", "p10", "p25", "min")
CAPACITY_RULES = ("tier", "gpus", "offers")
GAP_RULES = ("hold", "unavailable")
KEYS = ("timestamp", "price_stats", "availability", "by_provider", "by_config")
_SIZE = re.compile(r"([1-9][0-9]*)x")


@dataclass(frozen=True)
class Config:
    """One configuration size of a snapshot: its listings and the cheapest one's provider."""

    size: int
    count: int
    min_price: float  # $/GPU-h of the cheapest listing (the best deal)
    avg_price: float
    provider: str  # of the cheapest listing ("" when the snapshot does not say)
    spot: bool  # the cheapest listing is flagged interruptible


@dataclass(frozen=True)
class Snapshot:
    """What the mapping reads from one line."""

    line: int
    time: pd.Timestamp
    stats: dict[str, float]
    offers: int
    providers: dict[str, tuple[int, float, float]]  # name -> (listings, min, avg)
    configs: tuple[Config, ...]


def _open_text(path: Path) -> list[str]:
    return read_text(path).splitlines()


def is_marketplace_file(path: str | Path) -> bool:
    """True for a ``.jsonl`` / ``.jsonl.gz`` file, or one whose first line is a JSON object with a snapshot's
    ``timestamp`` and one of its summaries: so a damaged marketplace file gets the marketplace reader's
    message (with its line number), not another format's."""
    path = Path(path)
    if path.name.endswith((".jsonl", ".jsonl.gz")) and path.is_file():
        return True
    try:
        with open(path, "rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            first = fh.readline(1 << 20)
    except (OSError, EOFError):
        return False
    try:
        obj = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(obj, dict) and "timestamp" in obj and any(k in obj for k in KEYS[1:])


def _num(value: object, what: str, fail) -> float:
    """A price in USD per GPU-hour: a finite number >= 0, at most `MAX_PRICE` (as on the command line)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        fail(f"{what} = {value!r} is not a non-negative number")
    if value > MAX_PRICE:
        fail(f"{what} = {value!r} is above {MAX_PRICE:g} USD per GPU-hour")
    return float(value)


def _count(value: object, what: str, fail) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value < 0:
        fail(f"{what} = {value!r} is not a non-negative whole number")
    return int(value)


def _parse_line(path: Path, n: int, text: str) -> Snapshot:
    import pandas as pd
    def fail(problem: str) -> None:
        raise TraceError(f"{path}: line {n}: {problem}")

    try:
        obj = json.loads(text)
    except ValueError as exc:
        fail(f"not valid JSON ({getattr(exc, 'msg', exc)})")
    if not isinstance(obj, dict):
        fail("expected a JSON object (one snapshot per line)")
    missing = [k for k in KEYS if k not in obj]
    if missing:
        fail(f"missing key(s) {', '.join(missing)}; a marketplace snapshot has {', '.join(KEYS)}")
    ts = pd.to_datetime(obj["timestamp"], utc=True, errors="coerce") if isinstance(obj["timestamp"], str) else pd.NaT
    if pd.isna(ts):
        fail(f"unreadable timestamp {obj['timestamp']!r}")
    ps = obj["price_stats"]
    if not isinstance(ps, dict):
        fail("price_stats is not an object")
    stats = {}
    for k in ("min", "p10", "p25", "median"):
        if k not in ps:
            fail(f"price_stats has no {k!r}")
        stats[k] = _num(ps[k], f"price_stats.{k}", fail)
    if not stats["min"] <= stats["p10"] <= stats["p25"] <= stats["median"]:
        fail(f"price_stats out of order (min {stats['min']}, p10 {stats['p10']}, p25 {stats['p25']}, "
             f"median {stats['median']})")
    av = obj["availability"]
    if not isinstance(av, dict) or "total" not in av:
        fail("availability has no 'total'")
    offers = _count(av["total"], "availability.total", fail)
    bp = obj["by_provider"]
    if not isinstance(bp, dict):
        fail("by_provider is not an object")
    providers = {}
    for name, v in bp.items():
        if not isinstance(v, dict) or not all(k in v for k in ("count", "min", "avg")):
            fail(f"by_provider.{name} needs count, min and avg")
        c = _count(v["count"], f"by_provider.{name}.count", fail)
        lo = _num(v["min"], f"by_provider.{name}.min", fail)
        mean = _num(v["avg"], f"by_provider.{name}.avg", fail)
        if lo > mean + 1e-9:
            fail(f"by_provider.{name}: min {lo} above avg {mean}")
        providers[str(name)] = (c, lo, mean)
    bc = obj["by_config"]
    if not isinstance(bc, dict):
        fail("by_config is not an object")
    configs = []
    for key, v in bc.items():
        m = _SIZE.fullmatch(str(key))
        if m is None:
            fail(f"by_config key {key!r} is not a size like '8x'")
        if not isinstance(v, dict) or not all(k in v for k in ("count", "min_per_gpu", "avg_per_gpu")):
            fail(f"by_config.{key} needs count, min_per_gpu and avg_per_gpu")
        lo = _num(v["min_per_gpu"], f"by_config.{key}.min_per_gpu", fail)
        mean = _num(v["avg_per_gpu"], f"by_config.{key}.avg_per_gpu", fail)
        if lo > mean + 1e-9:
            fail(f"by_config.{key}: min_per_gpu {lo} above avg_per_gpu {mean}")
        deal = v.get("best_deal") if isinstance(v.get("best_deal"), dict) else {}
        listings = _count(v["count"], f"by_config.{key}.count", fail)
        if listings < 1:
            fail(f"by_config.{key}.count is 0: a size is summarised only when something of that size is listed")
        configs.append(Config(int(m.group(1)), listings, lo, mean, str(deal.get("provider") or ""),
                              deal.get("spot") is True))
    return Snapshot(n, ts, stats, offers, providers, tuple(configs))


def read_snapshots(path: str | Path) -> list[Snapshot]:
    """Every snapshot of a marketplace JSONL file (gzip or not), validated; blank lines are skipped.

    A malformed line raises one `TraceError` naming the file, the line number and the problem. Parsed files
    are kept in memory (keyed by path, size and modification time): notebooks load every provider of a file."""
    path = Path(path)
    try:
        st = path.stat()
    except OSError:
        st = None
    if st is None or not path.is_file():
        return _read_snapshots(path)
    return list(_read_cached(str(path), st.st_size, st.st_mtime_ns))


@lru_cache(maxsize=8)
def _read_cached(path: str, size: int, mtime_ns: int) -> tuple[Snapshot, ...]:
    return tuple(_read_snapshots(Path(path)))


def _read_snapshots(path: Path) -> list[Snapshot]:
    snaps = [_parse_line(path, i, line) for i, line in enumerate(_open_text(path), start=1) if line.strip()]
    if not snaps:
        raise TraceError(f"{path}: no snapshots (empty file)")
    for prev, cur in zip(snaps, snaps[1:]):
        if cur.time <= prev.time:
            raise TraceError(f"{path}: line {cur.line}: timestamp {cur.time} is not after line {prev.line}'s "
                             f"({prev.time}); snapshots must be in time order")
    return snaps


def marketplace_zones(path: str | Path) -> list[str]:
    """``"all"`` and then every provider, most often listed first (ties: first seen)."""
    seen: dict[str, int] = {}
    for s in read_snapshots(path):
        for name in s.providers:
            seen[name] = seen.get(name, 0) + 1
    return [ALL, *sorted(seen, key=lambda k: -seen[k])]


def snapshot_values(snap: Snapshot, zone: str = ALL, spot: str = "flagged", capacity: str = "tier",
                    tier_tol: float = 0.05) -> tuple[int, float, float]:
    """(spot GPUs, spot price, on-demand price) of one snapshot under the mapping of the module docstring;
    a provider absent from the snapshot gives (0, NaN, NaN)."""
    if zone == ALL:
        od = snap.stats["median"]
        flagged = [c for c in snap.configs if c.spot]
        if spot == "flagged" and flagged:
            price, pool = min(c.min_price for c in flagged), flagged
        else:
            price, pool = snap.stats["p10" if spot == "flagged" else spot], list(snap.configs)
        if capacity == "offers":
            gpus = snap.offers
        elif capacity == "gpus":
            gpus = sum(c.size * c.count for c in snap.configs)
        else:
            cut = price * (1 + tier_tol) + 1e-9
            gpus = sum(c.size * (c.count if c.avg_price <= cut else 1) for c in pool if c.min_price <= cut)
        return int(gpus), min(price, od), od
    if zone not in snap.providers:
        return 0, math.nan, math.nan
    listings, lo, od = snap.providers[zone]
    mine = [c for c in snap.configs if c.provider == zone]
    flagged = [c for c in mine if c.spot]
    if spot == "flagged" and flagged:
        price, pool = min(c.min_price for c in flagged), flagged
    else:
        price, pool = lo, mine
    if capacity == "offers":
        gpus = listings
    elif capacity == "gpus":
        gpus = sum(c.size for c in mine) + max(listings - len(mine), 0)
    else:
        cut = price * (1 + tier_tol) + 1e-9
        if od <= cut:  # all its listings are at the spot price
            gpus = sum(c.size for c in mine) + max(listings - len(mine), 0)
        else:  # the sizes where it is the cheapest at that price; at least its own cheapest listing
            gpus = sum(c.size for c in pool if c.min_price <= cut)
            gpus = max(gpus, 1 if (lo <= cut and listings > 0) else 0)
    return int(gpus), min(price, od), od


def snapshot_table(path: str | Path, tier_tol: float = 0.05) -> pd.DataFrame:
    """One row per snapshot, uncapped: the market-wide prices (min, p10, median, flagged spot offer) and the
    capacity under each rule (listed configurations, GPUs listed, GPUs at the spot price), plus how many
    providers list. What notebook 01 plots: the capacity's daily cycle is in these counts, not in the capped
    availability of a `Market`."""
    import pandas as pd
    rows = []
    for s in read_snapshots(path):
        flagged = [c.min_price for c in s.configs if c.spot]
        rows.append({
            "time": s.time, "line": s.line, "providers": len(s.providers), "offers": s.offers,
            "gpus": snapshot_values(s, ALL, "flagged", "gpus")[0],
            "tier_gpus": snapshot_values(s, ALL, "flagged", "tier", tier_tol)[0],
            "min": s.stats["min"], "p10": s.stats["p10"], "median": s.stats["median"],
            "flagged_spot": min(flagged) if flagged else np.nan,
            "spot_price": snapshot_values(s, ALL, "flagged", "tier", tier_tol)[1],
        })
    return pd.DataFrame(rows)


def provider_table(path: str | Path) -> pd.DataFrame:
    """One row per (snapshot, provider listed): listings, min and mean price. Absent providers have no row."""
    import pandas as pd
    rows = [{"time": s.time, "provider": name, "offers": c, "min": lo, "avg": mean}
            for s in read_snapshots(path) for name, (c, lo, mean) in s.providers.items()]
    return pd.DataFrame(rows, columns=["time", "provider", "offers", "min", "avg"])


def _check_options(zone: str, spot: str, capacity: str, gaps: str, tier_tol: float,
                   max_gap_hours: float, requested: int) -> None:
    if spot not in SPOT_RULES:
        raise TraceError(f"unknown spot rule {spot!r}; use one of {', '.join(SPOT_RULES)}")
    if zone != ALL and spot in ("p10", "p25"):
        raise TraceError(f"spot={spot!r} needs the market-wide percentiles; a provider ({zone}) has only min and "
                         "avg: use spot='flagged' or 'min'")
    if capacity not in CAPACITY_RULES:
        raise TraceError(f"unknown capacity rule {capacity!r}; use one of {', '.join(CAPACITY_RULES)}")
    if gaps not in GAP_RULES:
        raise TraceError(f"unknown gap rule {gaps!r}; use one of {', '.join(GAP_RULES)}")
    if not (math.isfinite(tier_tol) and tier_tol >= 0):
        raise TraceError(f"tier_tol must be a non-negative share of the spot price (got {tier_tol!r})")
    if not (math.isfinite(max_gap_hours) and max_gap_hours > 0):
        raise TraceError(f"max_gap_hours must be > 0 (got {max_gap_hours!r})")
    if isinstance(requested, bool) or not isinstance(requested, (int, np.integer)) or requested < 1:
        raise TraceError(f"requested must be a whole number of GPUs >= 1 (got {requested!r})")


def _fill(values: np.ndarray) -> np.ndarray:
    """Carry prices forward over a provider's absences, and back from its first snapshot."""
    import pandas as pd
    s = pd.Series(values, dtype=float)
    return s.ffill().bfill().to_numpy()


def load_marketplace_observations(path: str | Path, zone: str | None = ALL, spot: str = "flagged",
                                  capacity: str = "tier", requested: int = 8, tier_tol: float = 0.05,
                                  gaps: str = "hold", max_gap_hours: float = 1.0) -> Observations:
    """One zone (``"all"`` or a provider) of a marketplace file as raw observations at the snapshot times."""
    path = Path(path)
    zone = ALL if zone is None else str(zone)
    _check_options(zone, spot, capacity, gaps, tier_tol, max_gap_hours, requested)
    snaps = read_snapshots(path)
    if zone != ALL and not any(zone in s.providers for s in snaps):
        raise TraceError(f"{path}: no provider {zone!r}; zones in the file: {', '.join(marketplace_zones(path))}")
    vals = np.array([snapshot_values(s, zone, spot, capacity, tier_tol) for s in snaps], dtype=float)
    avail = np.minimum(vals[:, 0], requested).astype(np.int64)
    sp, od = _fill(vals[:, 1]), _fill(vals[:, 2])
    origin = snaps[0].time
    secs = np.array([(s.time - origin).total_seconds() for s in snaps])
    step = float(np.median(np.diff(secs))) if len(secs) > 1 else 1800.0
    hold = max_gap_hours * 3600.0
    gap_idx = np.flatnonzero(np.diff(secs) > hold + 1e-6)
    meta = {"source": str(path), "zone": zone, "gpu": _gpu_name(path), "cloud": "marketplace",
            "spot_rule": spot, "capacity_rule": capacity, "gap_rule": gaps, "requested": requested,
            "snapshots": len(snaps), "gaps_over_max": int(gap_idx.size),
            "gap_hours": float(np.sum(np.diff(secs)[gap_idx] - hold) / 3600.0) if gap_idx.size else 0.0,
            "absent_snapshots": int(sum(zone not in s.providers for s in snaps)) if zone != ALL else 0}
    if gaps == "unavailable" and gap_idx.size:
        # After `max_gap_hours` without a snapshot, an observation of 0 GPUs (prices held) until the next one.
        secs = np.insert(secs, gap_idx + 1, secs[gap_idx] + hold)
        avail = np.insert(avail, gap_idx + 1, 0)
        sp = np.insert(sp, gap_idx + 1, sp[gap_idx])
        od = np.insert(od, gap_idx + 1, od[gap_idx])
    return Observations(seconds=secs, avail=avail, spot_price=sp, od_price=od, requested=int(requested),
                        origin=origin, name=f"{path.name.split('.')[0]}:{zone}", step_seconds=step, meta=meta)


def load_marketplace(path: str | Path, zone: str | None = ALL, slot_hours: float | None = None,
                     **mapping) -> Market:
    """One zone of a marketplace file as a `Market` on a grid of `slot_hours` (default: the median
    snapshot spacing); `mapping` = the keyword options of `load_marketplace_observations`."""
    return load_marketplace_observations(path, zone, **mapping).to_market(slot_hours)


def _gpu_name(path: Path) -> str:
    """'H100_80GB_SXM5.jsonl.gz' -> 'H100 80GB SXM5' (the GPU profile is chosen from this name)."""
    return path.name.split(".")[0].replace("_", " ")


__all__ = ["ALL", "CAPACITY_RULES", "GAP_RULES", "SPOT_RULES", "is_marketplace_file", "load_marketplace",
           "load_marketplace_observations", "marketplace_zones", "provider_table", "read_snapshots",
           "snapshot_table", "snapshot_values"]
