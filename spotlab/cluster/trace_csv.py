"""Reading a trace CSV as text and checking its columns, with errors that name the file, column, lines and values.

Every cell is read as a string, so that a check can quote the offending line as it is in the file; the checks
raise one line (`TraceError` unless told otherwise) naming the first few bad rows. Shared by the job-table
reader (`job_table`), the node lists (`presets`) and CoTune's workload files (`alibaba_philly_workload`), which
sit above this module.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SpotlabError, TraceError
from ..text_files import read_text

__all__ = ["SHOWN_ROWS", "numeric_column", "raise_bad_rows", "read_trace_csv"]

SHOWN_ROWS = 3  # offending rows named in an error


def read_trace_csv(path: Path) -> pd.DataFrame:
    """Every cell as a string (so errors can quote the line); gzip recognised by its magic bytes."""
    text = read_text(path, "a job trace file (CSV)")
    if not text.strip():
        raise TraceError(f"{path}: empty file")
    try:
        df = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise TraceError(f"{path}: not a valid CSV ({' '.join(str(exc).split())})") from None
    df.columns = [str(c).strip() for c in df.columns]
    blank = (df.astype(str).apply(lambda col: col.str.strip()) == "").all(axis=1)
    return df[~blank.to_numpy()]  # the index stays the row's position in the file: line = index + 2


def raise_bad_rows(path: Path, column: str, bad: np.ndarray, raw: pd.Series, problem: str,
                   error: type[SpotlabError] = TraceError, shown: int = SHOWN_ROWS) -> None:
    """Raise `error` naming the column, the first offending file lines (header = line 1; `raw`'s index is the row's
    position in the file) and their values; nothing when no row is bad."""
    idx = np.flatnonzero(bad)
    if idx.size == 0:
        return
    lines = ", ".join(f"line {raw.index[i] + 2}: {raw.iloc[i]!r}" for i in idx[:shown])
    more = f" and {idx.size - shown} more" if idx.size > shown else ""
    raise error(f"{path}: column {column!r}: {problem} in {idx.size} row(s) ({lines}{more})")


def numeric_column(path: Path, df: pd.DataFrame, column: str, *, integer: bool = False, nonneg: str = "",
                   allow_empty: bool = False) -> np.ndarray:
    """A numeric column, checked: finite, whole if ``integer``, >= 0 if ``nonneg`` (the word for a negative)."""
    raw = df[column].astype(str).str.strip()
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    empty = (raw == "").to_numpy()
    raise_bad_rows(path, column, ~np.isfinite(values) & ~(empty & allow_empty), raw, "not a finite number")
    known = np.isfinite(values)
    if integer:
        raise_bad_rows(path, column, known & (values != np.round(values)), raw, "not a whole number")
    if nonneg:
        raise_bad_rows(path, column, known & (values < 0), raw, f"negative {nonneg}")
    return values
