"""The tidy market CSV: one row per (time, zone), validated with file, line and problem named."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TraceError
from ..text_files import read_text
from .market import MAX_COUNT, MAX_PRICE, Market, Observations

if TYPE_CHECKING:
    import pandas as pd


TIDY_COLUMNS = ("time", "zone", "requested", "available", "spot_price", "on_demand_price")


def _read_csv_strings(path: Path) -> pd.DataFrame:
    """All cells as strings, so that validation can name the offending row and value."""
    import pandas as pd
    text = read_text(path)
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
    df.columns = [str(c).strip() for c in df.columns]  # " zone" is the zone column
    missing = [c for c in TIDY_COLUMNS if c not in df.columns]
    if missing and len(df.columns) and str(df.columns[0]).lstrip()[:1] in ("[", "{"):
        raise TraceError(f"{path}: this is JSON, not a tidy market CSV; a sky_spot JSON trace is one object "
                         '{"metadata": {"gap_seconds": ...}, "data": [...]}, not a bare list')
    if missing:
        found = ", ".join(repr(str(c))[:40] for c in df.columns[:8]) + (", ..." if len(df.columns) > 8 else "")
        sep = next((s for s in (";", "\t", "|") if len(df.columns) == 1 and s in str(df.columns[0])), None)
        raise TraceError(
            f"{path}: missing column(s) {', '.join(missing)}; a tidy market CSV needs {', '.join(TIDY_COLUMNS)} "
            + (f"separated by commas (this file is separated by {sep!r})" if sep else f"(found {found})")
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
        if (vals.abs() > MAX_COUNT).any():
            fail((vals.abs() > MAX_COUNT).to_numpy(), f"{col} is above {MAX_COUNT:.0e} GPUs")
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
        if (vals > MAX_PRICE).any():
            fail((vals > MAX_PRICE).fillna(False).to_numpy(), f"{col} above {MAX_PRICE:g} USD per GPU-hour")
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
    """Raw observations of one zone of a tidy CSV (times kept as recorded)."""
    path = Path(path)
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


def load_tidy_csv(path: str | Path, zone: str | None = None, slot_hours: float | None = None) -> Market:
    """One zone of a tidy CSV as a `Market` on a grid of `slot_hours` (default: native step)."""
    return load_tidy_observations(path, zone).to_market(slot_hours)
