"""Job workloads for the cluster simulator, built from two public traces.

- **Alibaba GPU trace v2023** (`openb_pod_list_default.csv`, Weng et al., ATC'23): gives *when* jobs arrive
  (``creation_time``) and *how many GPUs* each asks for (``num_gpu``). Its pods have no usable durations for a
  training job (lifetimes of long-running services, censored at the trace's cut), so durations come from:
- **Microsoft Philly** (`philly_job_runtime_seconds.csv`, Jeon et al., ATC'19): gives *how long* jobs run; it has
  no arrival times nor GPU counts here, so runtimes are sampled independently of the Alibaba pods (seeded).

The Alibaba file starts with a long sparse prefix: before the first pod that did *not* survive to the trace's
cut (creation ~9.44e6 s), only the 15 GPU pods still running at the cut were recorded, so that period
under-represents arrivals by orders of magnitude (11 of 7,064 GPU pods fall in the first half of the raw
arrival span). By default (``observed_only=True``) the arrival span starts at that first completed pod, which
leaves ~40 days and 7,049 GPU pods; ``part=(0, 0.5)`` then holds 2,497 of them and ``(0.5, 1)`` 4,552.

Layers: the row checks come from `trace_csv` below; `job_table` above uses `observed_start` for the same file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import WorkloadError
from ..input_paths import input_file
from .trace_csv import raise_bad_rows

__all__ = ["ALIBABA_PODS", "PHILLY_RUNTIMES", "TraceJob", "load_alibaba_pods",
           "load_philly_runtimes", "observed_start", "resampled_workload", "trace_workload"]

ALIBABA_PODS = "traces/alibaba-gpu-v2023/openb_pod_list_default.csv"
PHILLY_RUNTIMES = "traces/philly/philly_job_runtime_seconds.csv"

POD_COLUMNS = ("creation_time", "num_gpu", "gpu_milli", "pod_phase")
_SHOWN_ROWS = 5  # how many offending rows an error message lists


@dataclass(frozen=True)
class TraceJob:
    """One job of a workload: arrival and GPU count from an Alibaba pod, runtime from Philly."""

    job_id: int
    arrival_s: float
    gpus: int
    runtime_s: float


# ------------------------------------------------------------------------------------------------ loaders


def _read_strings(path: Path) -> pd.DataFrame:
    """All cells as strings, so validation can name the offending line and value."""
    input_file(path, "a trace CSV file", WorkloadError)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise WorkloadError(f"{path}: not a UTF-8 text file") from None
    if not text.strip():
        raise WorkloadError(f"{path}: empty file")
    try:
        df = pd.read_csv(StringIO(text), dtype=str, keep_default_na=False)
    except pd.errors.ParserError as exc:
        raise WorkloadError(f"{path}: not a valid CSV ({exc})") from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _fail_rows(path: Path, column: str, bad: np.ndarray, raw: pd.Series, problem: str) -> None:
    """Raise a `WorkloadError` naming the column, the file lines and the values of the first bad rows."""
    raise_bad_rows(path, column, bad, raw, problem, error=WorkloadError, shown=_SHOWN_ROWS)


def _numeric(path: Path, df: pd.DataFrame, column: str, integer: bool = False) -> np.ndarray:
    raw = df[column].str.strip()
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    _fail_rows(path, column, ~np.isfinite(values), raw, "not a finite number")
    if integer:
        _fail_rows(path, column, values != np.round(values), raw, "not a whole number")
    return values


def load_alibaba_pods(path: str | Path | None = None) -> pd.DataFrame:
    """GPU pods of the Alibaba v2023 trace, sorted by creation time, with a ``gpus`` column and file ``line``.

    Pods without a GPU are dropped. A pod sharing one GPU (``num_gpu == 1``, ``gpu_milli < 1000``) counts as one
    whole GPU: a fine-tuning job cannot use a fraction. Raises `WorkloadError` naming the file, column and lines
    for an empty file, missing columns, non-numeric or negative values.
    """
    if path is None:
        from ..data.locate import dataset_path

        path = dataset_path(ALIBABA_PODS)
    path = Path(path)
    df = _read_strings(path)
    missing = [c for c in POD_COLUMNS if c not in df.columns]
    if missing:
        raise WorkloadError(f"{path}: missing column(s) {', '.join(missing)}; an Alibaba pod list needs "
                            f"{', '.join(POD_COLUMNS)} (found {', '.join(df.columns)})")
    if df.empty:
        raise WorkloadError(f"{path}: no data rows (header only)")
    df["line"] = np.arange(2, len(df) + 2)
    created = _numeric(path, df, "creation_time")
    _fail_rows(path, "creation_time", created < 0, df["creation_time"], "negative time")
    num_gpu = _numeric(path, df, "num_gpu", integer=True)
    _fail_rows(path, "num_gpu", num_gpu < 0, df["num_gpu"], "negative GPU count")
    milli = _numeric(path, df, "gpu_milli", integer=True)
    _fail_rows(path, "gpu_milli", (milli < 0) | (milli > 1000), df["gpu_milli"], "GPU share outside 0..1000")
    df["creation_time"] = created
    df["num_gpu"] = num_gpu.astype(np.int64)
    df["gpu_milli"] = milli.astype(np.int64)
    df["pod_phase"] = df["pod_phase"].str.strip()
    keep = df[df["num_gpu"] >= 1].copy()
    if keep.empty:
        raise WorkloadError(f"{path}: no pod asks for a GPU (num_gpu >= 1), so there is no GPU workload")
    keep["gpus"] = keep["num_gpu"].astype(np.int64)
    return keep.sort_values("creation_time", kind="stable").reset_index(drop=True)


def load_philly_runtimes(path: str | Path | None = None) -> np.ndarray:
    """Philly job runtimes in seconds (all > 0), in file order.

    Zero runtimes (2 rows in the real file) are dropped: a job that does no work cannot be simulated.
    Negative, non-numeric or missing values raise `WorkloadError` naming the lines.
    """
    if path is None:
        from ..data.locate import dataset_path

        path = dataset_path(PHILLY_RUNTIMES)
    path = Path(path)
    df = _read_strings(path)
    if "runtime" not in df.columns:
        raise WorkloadError(f"{path}: missing column 'runtime' (found {', '.join(df.columns)})")
    if df.empty:
        raise WorkloadError(f"{path}: no data rows (header only)")
    runtime = _numeric(path, df, "runtime")
    _fail_rows(path, "runtime", runtime < 0, df["runtime"], "negative runtime")
    runtime = runtime[runtime > 0]
    if runtime.size == 0:
        raise WorkloadError(f"{path}: no positive runtime")
    return runtime


# -------------------------------------------------------------------------------------------- workloads


def observed_start(pods: pd.DataFrame) -> float:
    """Creation time of the first GPU pod that did not survive to the trace's cut (phase other than Running).

    Before it the trace only holds pods still alive at the cut (see module doc), so arrivals there are not
    representative. Falls back to the first creation time when every pod is Running.
    """
    done = pods["creation_time"][pods["pod_phase"] != "Running"]
    return float(done.min() if len(done) else pods["creation_time"].min())


def check_part(part: tuple[float, float]) -> tuple[float, float]:
    """`part` as a pair of floats (a, b) with 0 <= a < b <= 1, else a `WorkloadError` saying so."""
    try:
        a, b = (float(x) for x in part)
    except (TypeError, ValueError):
        raise WorkloadError(f"part must be a pair (a, b) of fractions, got {part!r}") from None
    if not (0.0 <= a < b <= 1.0):
        raise WorkloadError(f"part must satisfy 0 <= a < b <= 1 (a fraction of the arrival span), got {part!r}")
    return a, b


def _check_positive(name: str, value: float | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) or value <= 0:
        raise WorkloadError(f"{name} must be a finite number > 0, got {value!r}")


def _check_count(name: str, value: int | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise WorkloadError(f"{name} must be a whole number >= 1, got {value!r}")


def _pods_and_runtimes(pods: pd.DataFrame | None, runtimes: np.ndarray | None) -> tuple[pd.DataFrame, np.ndarray]:
    pods = load_alibaba_pods() if pods is None else pods
    missing = [c for c in ("creation_time", "gpus", "pod_phase") if c not in pods.columns]
    if missing:
        raise WorkloadError(f"pods: missing column(s) {', '.join(missing)}; pass the frame of load_alibaba_pods")
    if pods.empty:
        raise WorkloadError("pods: empty frame, no arrivals to take")
    runtimes = load_philly_runtimes() if runtimes is None else np.asarray(runtimes, dtype=float)
    if runtimes.ndim != 1 or runtimes.size == 0 or not np.all(np.isfinite(runtimes) & (runtimes > 0)):
        raise WorkloadError("runtimes must be a non-empty 1-D array of finite seconds > 0")
    return pods, runtimes


def _part_pods(pods: pd.DataFrame, part: tuple[float, float], observed_only: bool) -> pd.DataFrame:
    """Pods whose creation time lies in fraction ``part`` of the arrival span, in arrival order."""
    a, b = check_part(part)
    pods = pods.sort_values("creation_time", kind="stable")
    if observed_only:
        pods = pods[pods["creation_time"] >= observed_start(pods)]
    t = pods["creation_time"].to_numpy(dtype=float)
    t0, span = t[0], t[-1] - t[0]
    lo, hi = t0 + a * span, t0 + b * span
    mask = (t >= lo) & ((t < hi) if b < 1.0 else (t <= hi))
    out = pods[mask]
    if out.empty:
        raise WorkloadError(f"part {part!r} of the arrival span [{t0:.0f}, {t0 + span:.0f}] s holds no pod")
    return out


def _runtimes(rng: np.random.Generator, runtimes: np.ndarray, n: int, cap: float | None) -> np.ndarray:
    out = rng.choice(runtimes, size=n, replace=True)
    return np.minimum(out, cap) if cap is not None else out


def _jobs(arrivals: np.ndarray, gpus: np.ndarray, runtime: np.ndarray) -> list[TraceJob]:
    return [TraceJob(int(i), float(t), int(g), float(r))
            for i, (t, g, r) in enumerate(zip(arrivals, gpus, runtime, strict=True))]


def trace_workload(
    part: tuple[float, float] = (0.0, 0.5),
    n_jobs: int | None = None,
    seed: int = 0,
    time_scale: float = 1.0,
    max_runtime_s: float | None = None,
    pods: pd.DataFrame | None = None,
    runtimes: np.ndarray | None = None,
    observed_only: bool = True,
) -> list[TraceJob]:
    """Jobs replaying the Alibaba arrivals and GPU counts of one part of the trace, with Philly runtimes.

    From Alibaba: the arrival times (re-based so the first job arrives at 0, then multiplied by ``time_scale``)
    and GPU counts of the pods in fraction ``part`` of the arrival span (default the first half, keeping the
    second half unseen for checking the simulator); ``n_jobs`` keeps the first n of them. From Philly: one
    runtime per job, drawn with replacement by ``numpy.random.default_rng(seed)``, clipped at
    ``max_runtime_s`` if given (Philly's longest job runs 53 days). ``time_scale < 1`` compresses arrivals,
    raising the load so that a small cluster sees queueing; ``> 1`` spreads them. ``pods`` / ``runtimes``
    replace the real files (frames of `load_alibaba_pods` / arrays of `load_philly_runtimes`).
    """
    _check_count("n_jobs", n_jobs, allow_none=True)
    _check_positive("time_scale", time_scale)
    _check_positive("max_runtime_s", max_runtime_s, allow_none=True)
    pods, runtimes = _pods_and_runtimes(pods, runtimes)
    chosen = _part_pods(pods, part, observed_only)
    if n_jobs is not None:
        if n_jobs > len(chosen):
            raise WorkloadError(f"part {part!r} of the trace holds {len(chosen)} GPU pod(s), fewer than n_jobs="
                                f"{n_jobs}; ask for at most {len(chosen)} (CLI: --n-jobs) or use resampled_workload "
                                "for larger workloads")
        chosen = chosen.iloc[:n_jobs]
    t = chosen["creation_time"].to_numpy(dtype=float)
    rng = np.random.default_rng(seed)
    runtime = _runtimes(rng, runtimes, len(chosen), max_runtime_s)
    return _jobs((t - t[0]) * time_scale, chosen["gpus"].to_numpy(), runtime)


def resampled_workload(
    n_jobs: int,
    seed: int = 0,
    time_scale: float = 1.0,
    max_runtime_s: float | None = None,
    part: tuple[float, float] = (0.0, 0.5),
    pods: pd.DataFrame | None = None,
    runtimes: np.ndarray | None = None,
    observed_only: bool = True,
) -> list[TraceJob]:
    """``n_jobs`` jobs of any size, bootstrapped from one part of the traces (seeded).

    From Alibaba (pods in fraction ``part`` of the arrival span, as in `trace_workload`): inter-arrival gaps and
    GPU counts, each drawn with replacement and independently of each other (so bursts of large jobs are not
    reproduced); the first job arrives at 0 and gaps are multiplied by ``time_scale``. From Philly: runtimes,
    drawn with replacement and clipped at ``max_runtime_s``. One ``numpy.random.default_rng(seed)`` draws gaps,
    then GPU counts, then runtimes.
    """
    _check_count("n_jobs", n_jobs)
    _check_positive("time_scale", time_scale)
    _check_positive("max_runtime_s", max_runtime_s, allow_none=True)
    pods, runtimes = _pods_and_runtimes(pods, runtimes)
    chosen = _part_pods(pods, part, observed_only)
    if len(chosen) < 2:
        raise WorkloadError(f"part {part!r} of the trace holds {len(chosen)} pod(s); at least 2 are needed to "
                            "resample inter-arrival gaps")
    gaps = np.diff(chosen["creation_time"].to_numpy(dtype=float))
    rng = np.random.default_rng(seed)
    drawn = rng.choice(gaps, size=n_jobs - 1, replace=True) * time_scale
    arrivals = np.concatenate(([0.0], np.cumsum(drawn)))
    gpus = rng.choice(chosen["gpus"].to_numpy(), size=n_jobs, replace=True)
    return _jobs(arrivals, gpus, _runtimes(rng, runtimes, n_jobs, max_runtime_s))
