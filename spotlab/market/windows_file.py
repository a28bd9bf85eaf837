"""Windows files: slices `[start_tick, end_tick)` of a trace in its native ticks, one run per row (`window, start_tick, end_tick`)."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import TraceError
from ..text_files import read_text

if TYPE_CHECKING:
    import pandas as pd


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
    text = read_text(path, "a windows file (CSV: window, start_tick, end_tick)")
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
        bad = ~np.isfinite(v) | (v != np.round(v)) | (v < 0) | (v > 2**53)  # beyond: not a tick of any trace
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
