"""The sweep's table: one row per point of the grid (parameters, status, error, seconds, results).

It is rebuilt from the records on disk at the end of every run, not accumulated in memory, so a run that
stops halfway loses nothing and a resumed one shows every point. Written as CSV, or Parquet for a
`.parquet` name; written under a temporary name and renamed in, like the records.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import SweepError
from .grid import Grid, point_hash
from .record import read_record

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet")  # what `write_table` writes, read from the name


def check_table_path(path: Path) -> None:
    """Fail before any point runs when the table cannot be written in the format its name asks for."""
    import importlib.util

    if not path.name.lower().endswith(TABLE_SUFFIXES):
        raise SweepError(f"table {path}: a table is written as {', '.join(TABLE_SUFFIXES)}; give a name ending in "
                         "one of them")
    if path.suffix.lower() == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise SweepError(f"writing {path} needs pyarrow (pip install pyarrow), or name a .csv table")


def collect_table(grid: Grid, out_dir: Path) -> pd.DataFrame:
    """One row per point of the grid, from the records on disk: parameters, status, error, seconds, results."""
    rows = []
    for swept in grid.points():
        key = point_hash(swept)
        rec = read_record(out_dir / "points" / key)
        params = {**grid.fixed, **swept}
        if rec:
            params.update(rec.get("params", {}))
        row: dict[str, Any] = {"hash": key, **params,
                               "status": rec["status"] if rec else "missing",
                               "error": rec.get("error") if rec else "no record yet",
                               "seconds": rec.get("seconds") if rec else math.nan}
        for k, v in ((rec or {}).get("results") or {}).items():
            row[f"result_{k}" if k in row else k] = v
        rows.append(row)
    table = pd.DataFrame(rows)
    for name in grid.names():  # lists and mappings as JSON text, so that CSV and Parquet hold them alike
        if name in table and table[name].map(lambda v: isinstance(v, (list, dict))).any():
            table[name] = table[name].map(lambda v: json.dumps(v) if isinstance(v, (list, dict)) else v)
    return table


def write_table(table: pd.DataFrame, path: Path) -> None:
    """Write the table as Parquet (a `.parquet` name) or CSV, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{uuid.uuid4().hex}.{path.name}")  # keeps the suffix: pandas infers compression
    if path.suffix.lower() == ".parquet":
        table.to_parquet(tmp, index=False)
    else:
        table.to_csv(tmp, index=False)
    os.replace(tmp, path)
