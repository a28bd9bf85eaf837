"""The one place where a market is cut into the windows a run simulates: the rows of a windows file, or jobs
one after another.

Jobs one after another: a window of the job's horizon (its hard deadline) starting every `stride_hours`, the
first after `skip_hours`. The default skip is the history each window keeps (a week), so that every job has a
full week of the market's past to learn from, as a forecasting policy needs; a named market of a trace too
short for that says so itself (`MarketSpec.skip_hours`). A trace too short for the skip and one job is an
error that says what to change, never a silent start without history.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ArgumentError, TraceError
from .episodes import Episodes
from .market import Market
from .windows_file import Windows, read_windows
from .zoned_episodes import ZonedEpisodes
from .zones import ZonedMarket

if TYPE_CHECKING:
    import pandas as pd

HISTORY_HOURS = 168.0  # the market's past each window keeps, for policies that forecast: a week


def cut_windows(market: Market | ZonedMarket, *, windows: str | Path | Windows | pd.DataFrame | None = None, stride_hours: float | None = None,
                horizon_hours: float | None = None, skip_hours: float | None = None,
                history_hours: float = HISTORY_HOURS, max_jobs: int | None = None) -> Episodes:
    """The windows of `market` to simulate, each keeping `history_hours` of the market before it:

    - `windows`: a windows file (or its rows: `Windows`, or a table with `start_tick` and `end_tick`),
      `[start_tick, end_tick)` in the trace's native ticks, one run per row;
    - `stride_hours` (with `horizon_hours`, the job's hard deadline): jobs one after another, a window of the
      horizon every `stride_hours`, the first after `skip_hours` (default: `market.meta["skip_hours"]` for a
      named market that states one, else `history_hours`), at most `max_jobs`;
    - neither: the whole trace as one window.

    A market of several zones is cut zone by zone into the same windows (`ZonedEpisodes`).
    """
    if isinstance(market, ZonedMarket):
        parts = tuple(cut_windows(z, windows=windows, stride_hours=stride_hours, horizon_hours=horizon_hours,
                                  skip_hours=skip_hours, history_hours=history_hours, max_jobs=max_jobs)
                      for z in market.zones)
        return ZonedEpisodes(parts, market.names, market.regions)
    if not isinstance(market, Market):
        raise ArgumentError(f"cut_windows: market must be a Market (spotlab.market.load.load_market(...)), got "
                            f"{type(market).__name__}")
    dt = market.slot_hours
    history = _slots(history_hours, dt, "history_hours", minimum=0)
    if windows is not None:
        if stride_hours is not None or skip_hours is not None or max_jobs is not None:
            raise TraceError("give either a windows file or jobs every stride hours (stride, skip, max jobs), "
                             "not both")
        return _from_file(market, windows, history)
    if stride_hours is None:
        if skip_hours is not None or max_jobs is not None:
            raise TraceError("skip_hours and max_jobs cut jobs one after another: give stride_hours too")
        return Episodes.from_markets([market])
    if horizon_hours is None:
        raise TraceError("cutting the trace into jobs needs the job's horizon (its hard deadline)")
    length = _slots(horizon_hours, dt, "horizon_hours", minimum=0, rounding=np.ceil)
    if length < 1:
        raise TraceError(f"horizon_hours must be > 0 (the job's hard deadline), got {horizon_hours!r}")
    stride = _slots(stride_hours, dt, "stride_hours", minimum=1)
    if skip_hours is None:
        skip_hours = market.meta.get("skip_hours", history_hours)
    skip = _slots(skip_hours, dt, "skip_hours", minimum=0)
    if max_jobs is not None and (isinstance(max_jobs, bool) or int(max_jobs) != max_jobs or max_jobs < 1):
        raise TraceError(f"max_jobs must be a whole number >= 1, got {max_jobs!r}")
    starts = stride_starts(len(market), length, stride, skip, max_jobs)
    if starts.size == 0:
        span = len(market) * dt
        hint = (f"; start the jobs earlier (CLI: --skip-hours, Python: skip_hours=) to run them with less than "
                f"{skip_hours:g} h of history" if skip else "")
        raise TraceError(f"{market.name}: the trace is {span:g} h long, too short for {skip_hours:g} h before the "
                         f"first job and one job of {horizon_hours:g} h{hint}")
    return Episodes.from_windows(market, starts, starts + length, history)


def stride_starts(n_slots: int, length: int, stride: int, skip: int = 0, max_jobs: int | None = None) -> np.ndarray:
    """Start slots of jobs one after another: a window of `length` slots every `stride` slots, from `skip`,
    as many as fit in `n_slots` (at most `max_jobs`). Empty when none fits."""
    starts = np.arange(int(skip), int(n_slots) - int(length) + 1, max(1, int(stride)), dtype=np.int64)
    return starts if max_jobs is None else starts[:int(max_jobs)]


def _slots(hours: float, dt: float, name: str, minimum: int, rounding=None) -> int:
    """`hours` in slots of `dt` (rounded, or by `rounding` of hours / dt - 1e-7), at least `minimum`."""
    if isinstance(hours, (bool, str, bytes)):
        raise TraceError(f"{name} must be a number of hours, got {hours!r}")
    try:
        value = float(hours)
    except (TypeError, ValueError):
        raise TraceError(f"{name} must be a number of hours, got {hours!r}") from None
    if not np.isfinite(value) or value < 0:
        raise TraceError(f"{name} must be a finite number of hours >= 0, got {hours!r}")
    n = int(round(value / dt)) if rounding is None else int(rounding(value / dt - 1e-7))
    if n < minimum:
        raise TraceError(f"{name} {value:g} h is shorter than one slot of {dt:g} h")
    return n


def _from_file(market: Market, windows, history: int) -> Episodes:
    """The rows of a windows file, mapped from the trace's native ticks to the market's slots."""
    if market.meta.get("offset_slots"):
        raise TraceError(f"{windows}: a windows file indexes the whole trace, but {market.name} is a part of it; "
                         "cut the windows from the whole trace")
    native_s = float(market.meta.get("native_step_seconds", market.slot_hours * 3600.0))
    ticks = market.meta.get("native_ticks")
    if isinstance(windows, (str, Path)):
        w = read_windows(windows, None if ticks is None else int(ticks))
        start_tick, end_tick = w.start_tick, w.end_tick
        windows = str(windows)
    else:
        start_tick, end_tick = _ticks(windows, ticks)
        windows = "windows"
    ratio = market.slot_hours * 3600.0 / native_s
    starts = start_tick / ratio
    stops = end_tick / ratio
    if not (np.allclose(starts, np.round(starts)) and np.allclose(stops, np.round(stops))):
        raise TraceError(
            f"{windows}: window boundaries do not fall on slots of {market.slot_hours:g} h "
            f"(the trace's native tick is {native_s:g} s); use a slot length that divides them"
        )
    starts = np.round(starts).astype(np.int64)
    stops = np.minimum(np.round(stops).astype(np.int64), len(market))
    return Episodes.from_windows(market, starts, stops, history)


def _ticks(rows, ticks: int | None) -> tuple[np.ndarray, np.ndarray]:
    """`start_tick`, `end_tick` of windows given as a table or a `Windows`, checked as a file's are."""
    try:
        start = np.asarray(rows.start_tick if isinstance(rows, Windows) else rows["start_tick"], dtype=float)
        end = np.asarray(rows.end_tick if isinstance(rows, Windows) else rows["end_tick"], dtype=float)
    except (KeyError, TypeError, ValueError):
        raise TraceError("windows must be a windows file or a table with whole-number columns start_tick and "
                         "end_tick") from None
    if start.size == 0:
        raise TraceError("no windows given")
    bad = ~np.isfinite(start) | ~np.isfinite(end) | (start < 0) | (end <= start) | (start != np.round(start)) \
        | (end != np.round(end)) | (False if ticks is None else end > ticks)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise TraceError(f"window {i} [{start[i]:g}, {end[i]:g}) is not a range of whole ticks within the trace"
                         + ("" if ticks is None else f"'s {ticks} ticks"))
    return start.astype(np.int64), end.astype(np.int64)
