"""Historical fine-tuning runs: load a real file in the public schema, or generate one from the ground truth.

A run is one execution of one configuration: its 7 parameters, whether it completed (`is_valid`) and, if it
did, its throughput in dataset tokens per second. The columns are those of the public fine-tuning benchmark
data (`SCHEMA`) plus `software_version`, so a real file drops in wherever generated runs are used.

The generated history (`generate_runs`) stands in for the seed's "5,000 configurations executed over 220 days",
which is not available offline: configurations are drawn from the space and each draw is measured once with
`PerfModel.measure` (flaky out-of-memory near the limit, log-normal throughput noise).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import RunsError
from ..input_paths import input_file
from .perf import DEFAULT, PerfModel
from .space import CATEGORICAL, NUMERIC, Config, enumerate_space

__all__ = ["RunsError", "SCHEMA", "OPTIONAL", "UNKNOWN_SOFTWARE", "load_runs", "generate_runs", "write_runs"]


SCHEMA = ("model_name", "method", "gpu_model", "number_gpus", "batch_size", "tokens_per_sample", "is_valid",
          "dataset_tokens_per_second")
OPTIONAL = ("software_version",)
# What an absent `software_version` column becomes: one version for every run (the public data's 7th
# parameter may be missing from a user's export; a single value keeps the 7-parameter predictors usable).
UNKNOWN_SOFTWARE = "unknown"

_TRUE = {"true", "1", "1.0", "t", "yes"}
_FALSE = {"false", "0", "0.0", "f", "no"}
_CSV = (".csv", ".csv.gz")
_PARQUET = (".parquet", ".pq")


def _rows(mask: np.ndarray | pd.Series, from_file: bool, limit: int = 10) -> str:
    """The offending rows, as a user finds them: line numbers for a file (header = 1), positions for a frame."""
    pos = np.flatnonzero(np.asarray(mask, dtype=bool))
    shown = [int(p) + 2 for p in pos[:limit]] if from_file else [int(p) for p in pos[:limit]]
    more = f" and {len(pos) - limit} more" if len(pos) > limit else ""
    kind = "lines (header = 1)" if from_file else "rows (0-based position)"
    return f"{kind} {shown}{more}"


def _read(path: Path) -> pd.DataFrame:
    name = path.name.lower()
    input_file(path, "a runs file (CSV or Parquet)", RunsError)
    try:
        if name.endswith(_PARQUET):
            try:
                return pd.read_parquet(path)
            except ImportError:
                raise RunsError(f"{path}: reading Parquet needs pyarrow or fastparquet (neither is importable); "
                                "install one or convert the file to CSV") from None
        if name.endswith(_CSV):
            return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise RunsError(f"{path}: the file is empty (need a header with the columns {list(SCHEMA)})") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise RunsError(f"{path}: cannot read the file ({type(exc).__name__}: {exc})") from None
    raise RunsError(f"{path}: unknown file type {path.suffix!r}; use one of {list(_CSV + _PARQUET)}")


def _is_valid(col: pd.Series, where: str, from_file: bool) -> np.ndarray:
    """True/False, 1/0 or the strings "true"/"false" (any case) to booleans; anything else is an error."""
    if col.dtype == bool:
        return col.to_numpy()
    text = col.map(lambda v: "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v).strip().lower())
    true, false = text.isin(_TRUE).to_numpy(), text.isin(_FALSE).to_numpy()
    bad = ~(true | false)
    if bad.any():
        seen = sorted(set(col[bad].astype(str)))[:5]
        raise RunsError(f"{where}: column 'is_valid' must be True/False, 1/0 or 'true'/'false'; got {seen} "
                        f"in {_rows(bad, from_file)}")
    return true


def load_runs(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Historical runs from a CSV/Parquet file (or a DataFrame), checked and with normalised dtypes.

    Requires the `SCHEMA` columns; `software_version` is optional: if absent, every run gets the single value
    `UNKNOWN_SOFTWARE` (and `attrs["software_version_filled"]` is True). Other columns are kept after these.
    Parameters are strings (categoricals) and integers >= 1 (numeric); `is_valid` is boolean; throughput is
    float, finite and > 0 for every valid run and may be missing (NaN) for invalid ones. Raises `RunsError`
    naming the file, column, rows and values for anything else (missing/empty/unreadable file too).
    """
    if isinstance(source, pd.DataFrame):
        raw, where, from_file = source.reset_index(drop=True).copy(), "runs frame", False
    else:
        path = Path(source)
        raw, where, from_file = _read(path), str(path), True
    raw.columns = [str(c).strip() for c in raw.columns]
    missing = [c for c in SCHEMA if c not in raw.columns]
    if missing:
        raise RunsError(f"{where}: missing column(s) {missing}; found {list(raw.columns) or 'none'}")
    if raw.empty:
        raise RunsError(f"{where}: no runs (the header is there but no rows)")
    filled = "software_version" not in raw.columns
    if filled:
        raw["software_version"] = UNKNOWN_SOFTWARE

    out = pd.DataFrame(index=raw.index)
    for c in CATEGORICAL:
        col = raw[c]
        bad = col.isna() | (col.astype(str).str.strip() == "")
        if bad.any():
            raise RunsError(f"{where}: column {c!r} is empty in {_rows(bad, from_file)}")
        out[c] = col.astype(str).str.strip()
    for c in NUMERIC:
        num = pd.to_numeric(raw[c], errors="coerce")
        bad = (num.isna() | (num < 1) | (num != np.floor(num))).to_numpy()
        if bad.any():
            seen = raw[c][bad].astype(str).unique().tolist()[:5]
            raise RunsError(f"{where}: column {c!r} must hold whole numbers >= 1; got {seen} in "
                            f"{_rows(bad, from_file)}")
        out[c] = num.astype(np.int64)
    valid = _is_valid(raw["is_valid"], where, from_file)
    out["is_valid"] = valid
    tps_raw = raw["dataset_tokens_per_second"]
    tps = pd.to_numeric(tps_raw, errors="coerce").astype(float)
    not_number = (tps.isna() & tps_raw.notna() & (tps_raw.astype(str).str.strip() != "")).to_numpy()
    if not_number.any():
        seen = tps_raw[not_number].astype(str).unique().tolist()[:5]
        raise RunsError(f"{where}: column 'dataset_tokens_per_second' is not a number: {seen} in "
                        f"{_rows(not_number, from_file)}")
    t = tps.to_numpy()
    bad = valid & ~(np.isfinite(t) & (t > 0))
    if bad.any():
        seen = tps[bad].tolist()[:5]
        raise RunsError(f"{where}: a valid run needs a finite throughput > 0 in 'dataset_tokens_per_second'; got "
                        f"{seen} in {_rows(bad, from_file)}")
    out["dataset_tokens_per_second"] = t
    order = list(SCHEMA) + list(OPTIONAL)
    extra = [c for c in raw.columns if c not in order]
    out = pd.concat([out[order], raw[extra]], axis=1) if extra else out[order]
    out = out.reset_index(drop=True)
    out.attrs = dict(getattr(source, "attrs", {}) or {}) if isinstance(source, pd.DataFrame) else {}
    out.attrs.setdefault("source", where)
    out.attrs["software_version_filled"] = filled
    return out


def generate_runs(n_runs: int = 5000, seed: int = 0, perf: PerfModel = DEFAULT, days: float = 220.0,
                  space: Sequence[Config] | None = None) -> pd.DataFrame:
    """`n_runs` historical runs measured on the analytical ground truth, in time order.

    Configurations are drawn uniformly *with replacement* from `space` (default: all 3,840 of
    `space.enumerate_space()`), so a repeated configuration is a repeated measurement (it may fail once and
    succeed once near the memory limit, and its throughput differs by the noise). Each draw is measured once
    with `perf.measure`; its `timestamp_days` is uniform over `[0, days)` and rows are sorted by it.
    Independent seeded streams for the draws, the times and the measurements come from `seed`, so the frame
    is a function of the arguments; `attrs` records the seed, the performance model and the arguments.
    """
    if isinstance(n_runs, bool) or not isinstance(n_runs, (int, np.integer)) or n_runs < 1:
        raise RunsError(f"n_runs must be an integer >= 1 (got {n_runs!r})")
    if not (np.isfinite(days) and days > 0):
        raise RunsError(f"days must be > 0 (got {days!r})")
    configs = list(enumerate_space() if space is None else space)
    if not configs:
        raise RunsError("the configuration space to sample from is empty")
    pick_ss, time_ss, measure_ss = np.random.SeedSequence(seed).spawn(3)
    idx = np.random.default_rng(pick_ss).integers(0, len(configs), size=int(n_runs))
    when = np.sort(np.random.default_rng(time_ss).uniform(0.0, float(days), size=int(n_runs)))
    rng = np.random.default_rng(measure_ss)
    rows = []
    for i, t in zip(idx, when):
        c = configs[int(i)]
        ok, tps = perf.measure(c, rng)
        rows.append({**c.as_dict(), "is_valid": bool(ok), "dataset_tokens_per_second": tps, "timestamp_days": t})
    df = pd.DataFrame(rows)
    df = df[list(SCHEMA) + list(OPTIONAL) + ["timestamp_days"]]
    df = df.astype({"number_gpus": np.int64, "batch_size": np.int64, "tokens_per_sample": np.int64,
                    "is_valid": bool, "dataset_tokens_per_second": float})
    df.attrs = {"source": "generated", "generator": "spotlab.cotune.run_history.generate_runs", "seed": int(seed),
                "n_runs": int(n_runs), "days": float(days), "space_size": len(configs), "perf": asdict(perf),
                "software_version_filled": False}
    return df


def write_runs(df: pd.DataFrame, path: str | Path) -> Path:
    """Write runs as CSV (`.csv`, `.csv.gz`) or Parquet (`.parquet`, `.pq`, needs pyarrow), chosen by suffix."""
    path = Path(path)
    name = path.name.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    if name.endswith(_CSV):
        df.to_csv(path, index=False)
    elif name.endswith(_PARQUET):
        try:
            df.to_parquet(path, index=False)
        except ImportError:
            raise RunsError(f"{path}: writing Parquet needs pyarrow or fastparquet (neither is importable); "
                            "use a .csv path") from None
    else:
        raise RunsError(f"{path}: unknown file type {path.suffix!r}; use one of {list(_CSV + _PARQUET)}")
    return path
