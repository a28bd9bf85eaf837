"""The sky_spot JSON trace format (the Can't Be Late simulator's)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import numpy as np

from ..errors import TraceError
from ..input_paths import input_file
from ..text_files import TRACE_FILE, read_text
from .market import MAX_COUNT, MAX_PRICE, Observations

CONVENTIONS = ("preempted", "available")


def load_sky_spot_observations(
    path: str | Path, convention: str = "preempted", requested: int | None = None
) -> Observations:
    """Raw ticks of a sky_spot JSON trace (see the module docstring for `convention`)."""
    path = Path(path)
    if convention not in CONVENTIONS:
        raise TraceError(f"unknown JSON convention {convention!r}; use one of {', '.join(CONVENTIONS)}")
    text = read_text(path)
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
    bad = [i for i, v in enumerate(data) if isinstance(v, bool) or not isinstance(v, (int, float))
           or not math.isfinite(v) or v != int(v) or not 0 <= v <= MAX_COUNT]
    if bad:
        raise TraceError(f"{path}: data[{bad[0]}] = {data[bad[0]]!r} is not a whole number in 0..{MAX_COUNT:.0e}")
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
    per_instance = _gpus_per_instance(meta, path)
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
        badp = np.flatnonzero(spot > MAX_PRICE)
        if badp.size:
            raise TraceError(f"{path}: prices[{badp[0]}] = {prices[badp[0]]!r} is above {MAX_PRICE:g} USD per "
                             "GPU-hour")
    info = meta.get("price_info") if isinstance(meta, dict) else None
    if isinstance(info, dict) and info.get("on_demand_price") is not None:
        given = info["on_demand_price"]
        if isinstance(given, bool) or not isinstance(given, (int, float)) or not np.isfinite(given) or given < 0:
            raise TraceError(f"{path}: metadata.price_info.on_demand_price = {given!r} is not a price (a finite "
                             "number >= 0)")
        if given / per_instance > MAX_PRICE:
            raise TraceError(f"{path}: metadata.price_info.on_demand_price = {given!r} is above {MAX_PRICE:g} USD "
                             "per GPU-hour")
        od[:] = float(given) / per_instance
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


def _gpus_per_instance(meta: dict, path: Path) -> float:
    """Prices in sky_spot files are per machine; divide by its GPUs to get USD per GPU-hour."""
    info = meta.get("price_info") if isinstance(meta, dict) else None
    if isinstance(info, dict):
        for i, comp in enumerate(info.get("components") or []):
            if isinstance(comp, dict) and comp.get("label") == "gpu" and "quantity" in comp:
                q = comp["quantity"]
                if isinstance(q, bool) or not isinstance(q, (int, float)) or not math.isfinite(q) or q <= 0:
                    raise TraceError(f"{path}: metadata.price_info.components[{i}].quantity = {q!r} is not a number "
                                     "of GPUs > 0")
                return float(q)
    return 1.0


def is_json_trace(path: str | Path) -> bool:
    """sky_spot JSON traces start with '{'; tidy traces are CSV (possibly gzip'd). A marketplace JSONL file
    starts with '{' too: `load.trace_format` tells it apart first."""
    path = input_file(path, TRACE_FILE, TraceError)
    head = b""
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as fh:
            return fh.read(256).lstrip()[:1] in (b"{", b"[")
    except (OSError, EOFError) as exc:
        what = "damaged gzip file" if head == b"\x1f\x8b" else "cannot be read"
        raise TraceError(f"{path}: {what} ({exc})") from None
