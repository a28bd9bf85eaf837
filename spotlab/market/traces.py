"""Loaders for the two real trace formats, with validation that names file, row and problem.

- Tidy CSV (`markets/*.csv.gz`): one row per (time, zone) with columns
  `time, cloud, zone, gpu, requested, available, spot_price, on_demand_price`.
- sky_spot JSON (the Can't Be Late simulator's format): `{"metadata": {"gap_seconds": g}, "data": [...],
  "prices": [...]}`. Its convention is `data[i] = 1` when spot is *unavailable* (preempted); the
  skypilot / SpotHedge releases store the *count of available* instances instead, so the caller must
  say which (`convention="preempted"` or `"available"`): the two cannot be told apart for 0/1 data.
- Windows CSV (`window, start_tick, end_tick`): slices `[start, end)` of a JSON trace.
- Marketplace JSONL (`.jsonl` / `.jsonl.gz`, one snapshot per line with `timestamp, price_stats,
  availability, by_provider, by_config`): recognised from its first line and read by `spotlab.market.marketplace`
  (zone = a provider or "all"). It is a zone-structured trace like the tidy CSV, so `tidy_zones` and
  `load_tidy_observations` accept it too (the CLI and notebooks reach it through them).
"""

from __future__ import annotations

import csv
import gzip
import json
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TraceError
from .market import Market, Observations
from .marketplace import is_marketplace_file, load_marketplace_observations, marketplace_zones, read_trace_text

if TYPE_CHECKING:
    import pandas as pd

TIDY_COLUMNS = ("time", "zone", "requested", "available", "spot_price", "on_demand_price")
CONVENTIONS = ("preempted", "available")


_read_text = read_trace_text  # gzip or plain, one clear error for what cannot be read


def _read_csv_strings(path: Path) -> pd.DataFrame:
    """All cells as strings, so that validation can name the offending row and value."""
    import pandas as pd
    text = _read_text(path)
    if not text.strip():
        raise TraceError(f"{path}: empty file")
    try:
        return pd.read_csv(StringIO(text), dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        raise TraceError(f"{path}: not a valid CSV ({exc})") from None


def read_tidy_csv(path: str | Path) -> pd.DataFrame:
    """Read and validate a tidy market CSV; returns the rows with `line` = line number in the file."""
    import pandas as pd
    path = Path(path)
    df = _read_csv_strings(path)
    missing = [c for c in TIDY_COLUMNS if c not in df.columns]
    if missing and len(df.columns) and str(df.columns[0]).lstrip()[:1] in ("[", "{"):
        raise TraceError(f"{path}: this is JSON, not a tidy market CSV; a sky_spot JSON trace is one object "
                         '{"metadata": {"gap_seconds": ...}, "data": [...]}, not a bare list')
    if missing:
        raise TraceError(
            f"{path}: missing column(s) {', '.join(missing)}; a tidy market CSV needs {', '.join(TIDY_COLUMNS)}"
        )
    if df.empty:
        raise TraceError(f"{path}: no data rows (header only)")
    df["line"] = np.arange(2, len(df) + 2)

    def fail(mask: np.ndarray, problem: str) -> None:
        i = int(np.flatnonzero(mask)[0])
        row = df.iloc[i]
        raise TraceError(f"{path}: line {row['line']} (zone {row['zone'] or '?'}): {problem} (value {row_repr(row)})")

    def row_repr(row: pd.Series) -> str:
        return ", ".join(f"{c}={row[c]!r}" for c in TIDY_COLUMNS)

    times = pd.to_datetime(df["time"], utc=True, errors="coerce", format="ISO8601")
    fail_mask = times.isna().to_numpy()
    if fail_mask.any():
        fail(fail_mask, "unreadable time")
    if (df["zone"].str.strip() == "").any():
        fail((df["zone"].str.strip() == "").to_numpy(), "empty zone")
    out = pd.DataFrame({"time": times, "zone": df["zone"], "line": df["line"]})
    for col in ("requested", "available"):
        vals = pd.to_numeric(df[col], errors="coerce")
        bad = vals.isna() | (vals != np.round(vals))
        if bad.any():
            fail(bad.to_numpy(), f"{col} is not a whole number")
        out[col] = vals.astype(np.int64)
    if (out["requested"] < 1).any():
        fail((out["requested"] < 1).to_numpy(), "requested must be >= 1")
    if (out["available"] < 0).any():
        fail((out["available"] < 0).to_numpy(), "negative availability")
    if (out["available"] > out["requested"]).any():
        fail((out["available"] > out["requested"]).to_numpy(), "availability above what was requested")
    for col in ("spot_price", "on_demand_price"):
        blank = df[col].str.strip() == ""
        vals = pd.to_numeric(df[col].where(~blank), errors="coerce")
        bad_text = (vals.isna() & ~blank) | np.isinf(vals)
        if bad_text.any():
            fail(bad_text.to_numpy(), f"{col} is not a number (NaN, inf or text)")
        if (vals < 0).any():
            fail((vals < 0).fillna(False).to_numpy(), f"negative {col}")
        out[col] = vals.astype(float)
    for extra in ("cloud", "gpu"):
        out[extra] = df[extra] if extra in df.columns else ""
    return out


def _zone_frame(df: pd.DataFrame, path: Path, zone: str | None) -> tuple[str, pd.DataFrame]:
    zones = list(dict.fromkeys(df["zone"]))
    if zone is None:
        if len(zones) > 1:
            raise TraceError(f"{path}: holds {len(zones)} zones ({', '.join(zones)}); choose one with zone=/--zone")
        zone = zones[0]
    if zone not in zones:
        raise TraceError(f"{path}: no zone {zone!r}; zones in the file: {', '.join(zones)}")
    z = df[df["zone"] == zone]
    t = z["time"].to_numpy()
    back = np.flatnonzero(t[1:] < t[:-1])
    if back.size:
        i = back[0] + 1
        raise TraceError(f"{path}: line {z['line'].iloc[i]} (zone {zone}): time {z['time'].iloc[i]} is before the previous row's; rows must be sorted by time")
    dup = np.flatnonzero(t[1:] == t[:-1])
    if dup.size:
        i = dup[0] + 1
        raise TraceError(f"{path}: lines {z['line'].iloc[i - 1]} and {z['line'].iloc[i]} (zone {zone}): duplicate time {z['time'].iloc[i]}")
    for col in ("spot_price", "on_demand_price"):
        v = z[col].to_numpy()
        if np.isnan(v).any() and not np.isnan(v).all():
            i = int(np.flatnonzero(np.isnan(v))[0])
            raise TraceError(f"{path}: line {z['line'].iloc[i]} (zone {zone}): {col} missing while other rows have it")
    if z["requested"].nunique() > 1:
        i = int(np.flatnonzero(z["requested"].to_numpy() != z["requested"].iloc[0])[0])
        raise TraceError(f"{path}: line {z['line'].iloc[i]} (zone {zone}): requested changes within the zone")
    return zone, z


def load_tidy_observations(path: str | Path, zone: str | None = None) -> Observations:
    """Raw observations of one zone of a tidy CSV (times kept as recorded), or of a marketplace JSONL file
    (default mapping of `spotlab.market.marketplace`; zone None = "all")."""
    path = Path(path)
    if is_marketplace_file(path):
        return load_marketplace_observations(path, zone)
    df = read_tidy_csv(path)
    zone, z = _zone_frame(df, path, zone)
    origin = z["time"].iloc[0]
    secs = (z["time"] - origin).dt.total_seconds().to_numpy()
    gpu = str(z["gpu"].iloc[0])
    return Observations(
        seconds=secs,
        avail=z["available"].to_numpy(),
        spot_price=z["spot_price"].to_numpy(),
        od_price=z["on_demand_price"].to_numpy(),
        requested=int(z["requested"].iloc[0]),
        origin=origin,
        name=f"{path.name.split('.')[0]}:{zone}",
        meta={"source": str(path), "zone": zone, "gpu": gpu, "cloud": str(z["cloud"].iloc[0])},
    )


def tidy_zones(path: str | Path) -> list[str]:
    """Zones present in a tidy CSV, in file order (a marketplace file: "all", then its providers)."""
    if is_marketplace_file(path):
        return marketplace_zones(path)
    return list(dict.fromkeys(read_tidy_csv(path)["zone"]))


def load_tidy_csv(path: str | Path, zone: str | None = None, slot_hours: float | None = None) -> Market:
    """One zone of a tidy CSV as a `Market` on a grid of `slot_hours` (default: native step)."""
    return load_tidy_observations(path, zone).to_market(slot_hours)


def load_sky_spot_observations(
    path: str | Path, convention: str = "preempted", requested: int | None = None
) -> Observations:
    """Raw ticks of a sky_spot JSON trace (see the module docstring for `convention`)."""
    path = Path(path)
    if convention not in CONVENTIONS:
        raise TraceError(f"unknown JSON convention {convention!r}; use one of {', '.join(CONVENTIONS)}")
    text = _read_text(path)
    if not text.strip():
        raise TraceError(f"{path}: empty file")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(obj, dict) or "data" not in obj:
        raise TraceError(f"{path}: a sky_spot trace is a JSON object with a 'data' list (and 'metadata.gap_seconds')")
    meta = obj.get("metadata") or {}
    gap = meta.get("gap_seconds") if isinstance(meta, dict) else None
    if not isinstance(gap, (int, float)) or isinstance(gap, bool) or not np.isfinite(gap) or gap <= 0:
        raise TraceError(f"{path}: metadata.gap_seconds must be a positive number (got {gap!r})")
    data = obj["data"]
    if not isinstance(data, list) or not data:
        raise TraceError(f"{path}: 'data' must be a non-empty list")
    bad = [i for i, v in enumerate(data) if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v) or v < 0]
    if bad:
        raise TraceError(f"{path}: data[{bad[0]}] = {data[bad[0]]!r} is not a non-negative whole number")
    vals = np.asarray(data, dtype=np.int64)
    if convention == "preempted":
        if vals.max() > 1:
            i = int(np.argmax(vals > 1))
            raise TraceError(
                f"{path}: data[{i}] = {vals[i]} but the 'preempted' convention (1 = unavailable) allows only 0/1; "
                "this looks like a count of available instances: load it with convention='available' "
                "(CLI: --json-convention available)"
            )
        avail = 1 - vals
        req = 1 if requested is None else int(requested)
    else:
        req = int(max(vals.max(), 1) if requested is None else requested)
        avail = vals
        if vals.max() > req:
            i = int(np.argmax(vals > req))
            raise TraceError(f"{path}: data[{i}] = {vals[i]} is above the {req} instances requested")
    n = len(vals)
    spot = np.full(n, np.nan)
    od = np.full(n, np.nan)
    per_instance = _gpus_per_instance(meta)
    if "prices" in obj and obj["prices"] is not None:
        prices = obj["prices"]
        if not isinstance(prices, list) or len(prices) != n:
            raise TraceError(f"{path}: 'prices' must be a list as long as 'data' ({n}), got {len(prices) if isinstance(prices, list) else type(prices).__name__}")
        try:
            spot = np.asarray(prices, dtype=float) / per_instance
        except (TypeError, ValueError):
            raise TraceError(f"{path}: 'prices' holds a non-number") from None
        badp = np.flatnonzero(~np.isfinite(spot) | (spot < 0))
        if badp.size:
            raise TraceError(f"{path}: prices[{badp[0]}] = {prices[badp[0]]!r} is not a valid price (NaN or negative)")
    info = meta.get("price_info") if isinstance(meta, dict) else None
    if isinstance(info, dict) and isinstance(info.get("on_demand_price"), (int, float)):
        od[:] = float(info["on_demand_price"]) / per_instance
    origin = None
    start = meta.get("start_time") if isinstance(meta, dict) else None
    if isinstance(start, str):
        import pandas as pd

        ts = pd.to_datetime(start, utc=True, errors="coerce")
        origin = None if pd.isna(ts) else ts
    return Observations(
        seconds=np.arange(n) * float(gap),
        avail=avail,
        spot_price=spot,
        od_price=od,
        requested=req,
        origin=origin,
        name=path.name.removesuffix(".json"),
        step_seconds=float(gap),
        meta={"source": str(path), "convention": convention, "gpus_per_instance": per_instance},
    )


def _gpus_per_instance(meta: dict) -> float:
    """Prices in sky_spot files are per machine; divide by its GPUs to get USD per GPU-hour."""
    info = meta.get("price_info") if isinstance(meta, dict) else None
    if isinstance(info, dict):
        for comp in info.get("components") or []:
            if isinstance(comp, dict) and comp.get("label") == "gpu" and isinstance(comp.get("quantity"), (int, float)):
                if comp["quantity"] > 0:
                    return float(comp["quantity"])
    return 1.0


def load_sky_spot_json(
    path: str | Path, convention: str = "preempted", slot_hours: float | None = None, requested: int | None = None
) -> Market:
    """A sky_spot JSON trace as a `Market` (native tick by default)."""
    return load_sky_spot_observations(path, convention, requested).to_market(slot_hours)


@dataclass(frozen=True)
class Windows:
    """Windows `[start_tick, end_tick)` of a trace, one entry per CSV row (`line` = its line in the file)."""

    window: np.ndarray
    start_tick: np.ndarray
    end_tick: np.ndarray
    line: np.ndarray

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame({"window": self.window, "start_tick": self.start_tick, "end_tick": self.end_tick})


def read_windows(path: str | Path, n_ticks: int | None = None) -> Windows:
    """Read and validate a windows CSV with the standard library and numpy: the simulator's command line reads
    30,000 windows this way without paying for pandas' import."""
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise TraceError(f"{path}: empty file")
    reader = csv.reader(StringIO(text))
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        for row in reader:
            if not row or not "".join(row).strip():
                continue
            if header is None:
                header = [c.strip() for c in row]
                continue
            if len(row) > len(header):
                raise TraceError(f"{path}: line {reader.line_num}: {len(row)} fields, the header has {len(header)}")
            rows.append(row + [""] * (len(header) - len(row)))
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise TraceError(f"{path}: not a valid CSV ({exc})") from None
    if header is None:  # only separators
        raise TraceError(f"{path}: no header line; a windows CSV needs window, start_tick, end_tick")
    missing = [c for c in ("start_tick", "end_tick") if c not in header]
    if missing:
        raise TraceError(f"{path}: missing column(s) {', '.join(missing)}; a windows CSV needs window, start_tick, end_tick")
    if not rows:
        raise TraceError(f"{path}: no windows (header only)")
    line = np.asarray(lines, dtype=np.int64)

    def column(name: str, whole: bool) -> np.ndarray:
        cells = [r[header.index(name)] for r in rows]
        try:
            v = np.asarray(cells, dtype=float)
        except ValueError:
            v = np.array([_number(c) for c in cells])
        if not whole:
            return v
        bad = ~np.isfinite(v) | (v != np.round(v)) | (v < 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise TraceError(f"{path}: line {line[i]}: {name} = {cells[i]!r} is not a non-negative whole number")
        return v.astype(np.int64)

    start, end = column("start_tick", True), column("end_tick", True)
    window = column("window", False) if "window" in header else np.arange(len(rows))
    if np.all(np.isfinite(window)) and np.all(window == np.round(window)):
        window = window.astype(np.int64)
    bad = np.flatnonzero(end <= start)
    if bad.size:
        i = int(bad[0])
        raise TraceError(f"{path}: line {line[i]}: end_tick {end[i]} is not after start_tick {start[i]}")
    if n_ticks is not None:
        bad = np.flatnonzero(end > n_ticks)
        if bad.size:
            i = int(bad[0])
            raise TraceError(f"{path}: line {line[i]}: end_tick {end[i]} is beyond the trace's {n_ticks} ticks")
    return Windows(window, start, end, line)


def _number(cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        return float("nan")


def load_windows_csv(path: str | Path, n_ticks: int | None = None) -> pd.DataFrame:
    """Windows `[start_tick, end_tick)` of a trace as a table (columns window, start_tick, end_tick)."""
    return read_windows(path, n_ticks).to_frame()


def is_json_trace(path: str | Path) -> bool:
    """sky_spot JSON traces start with '{'; tidy traces are CSV (possibly gzip'd). A marketplace JSONL file
    also starts with '{' but is not a sky_spot trace."""
    path = Path(path)
    if is_marketplace_file(path):
        return False
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            return fh.read(256).lstrip()[:1] == b"{"
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, expected a trace file") from None
    except (OSError, EOFError) as exc:
        raise TraceError(f"{path}: cannot be read ({exc})") from None


def load_trace(
    path: str | Path,
    zone: str | None = None,
    slot_hours: float | None = None,
    convention: str = "preempted",
    requested: int | None = None,
) -> Market:
    """Load a trace of any format, chosen by content (marketplace JSONL, JSON object or CSV). A JSON trace
    is one zone, so `zone` applies to tidy CSVs (a zone) and marketplace files (a provider or "all")."""
    if is_marketplace_file(path):
        return load_marketplace_observations(path, zone, requested=8 if requested is None else requested).to_market(slot_hours)
    if is_json_trace(path):
        return load_sky_spot_json(path, convention, slot_hours, requested)
    return load_tidy_csv(path, zone, slot_hours)
