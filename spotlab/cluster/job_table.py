"""Real GPU job traces as one tidy job table, and the table transforms a cluster experiment needs.

Every trace becomes a `pandas.DataFrame` with exactly the columns `COLUMNS` and the dtypes `DTYPES`, one row
per GPU job, sorted by submit time, the first submission at 0 s:

- ``job_id`` (string): the trace's id, else ``<file>:<line>``;
- ``submit_time_s``, ``duration_s`` (float64 seconds); ``num_gpus`` (int64, >= 1);
- ``gpu_type`` (string, <NA> when the trace does not say); ``pool`` (Int64: index into a cluster's pools, <NA>
  until `spotlab.cluster.presets.assign_pools` sets it, and for jobs no pool can hold);
- ``user`` (string); ``status`` (category of `STATUSES`); ``source`` (string: trace, and its cluster or VC).

The format is recognised from the columns, so any file laid out like one of the published traces loads:

- ``itp``: Microsoft ITP 2021 (``job_id, submission_time, duration, num_gpu``);
- ``pollux``: Philly 2017 as processed for Pollux (``timestamp, duration, num_gpus`` [, ``cluster``]);
- ``gpw``: the "latest 15,000 jobs" of Helios 2020 and Philly 2017 (``u_id, user, gpu_num, interval, run_time,
  new_status``);
- ``openb``: Alibaba GPU 2023 pods (``name, num_gpu, gpu_milli, pod_phase, creation_time, deletion_time,
  scheduled_time`` [, ``gpu_spec``]).

What a trace lacks is never invented silently: ``attrs["substitutes"]`` states, per field, what stands in
(`SUBSTITUTES`), ``attrs["seed"]`` the seed of any random draw, ``attrs["dropped"]`` the rows left out and why,
``attrs["caveats"]`` what the data cannot support. A malformed file raises one `TraceError` line naming the
file and the problem.

Layers: `trace_csv` (reading, row checks) and `alibaba_philly_workload` (`observed_start`) below this module;
`presets` and `trace_jobs` above it, using `check_table` and `check_seed`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd

from ..errors import JobTableError, TraceError
from .alibaba_philly_workload import observed_start
from .trace_csv import numeric_column, raise_bad_rows, read_trace_csv

__all__ = ["COLUMNS", "DTYPES", "STATUSES", "SUBSTITUTES", "SYNTHETIC_USERS", "TRACES", "check_seed", "check_table",
           "job_table", "job_windows", "offered_load", "read_job_table", "with_load", "with_multi_gpu_share"]

STATUSES = ("completed", "failed", "killed", "running", "unknown")
COLUMNS = ("job_id", "submit_time_s", "num_gpus", "duration_s", "gpu_type", "pool", "user", "status", "source")
DTYPES: Mapping[str, object] = MappingProxyType({
    "job_id": pd.StringDtype(), "submit_time_s": np.dtype("float64"), "num_gpus": np.dtype("int64"),
    "duration_s": np.dtype("float64"), "gpu_type": pd.StringDtype(), "pool": pd.Int64Dtype(),
    "user": pd.StringDtype(), "status": pd.CategoricalDtype(list(STATUSES)), "source": pd.StringDtype(),
})

# Synthetic users for traces without users: Zipf weights 1/k over 100 users put 57% of jobs on the top 10% of
# users, between what the traces that record users show (GPU jobs of helios-gpw: 50%, of philly-gpw: 69%).
SYNTHETIC_USERS = 100
SUBSTITUTES: Mapping[str, str] = MappingProxyType({
    "user": ("not in the trace: each job gets one of {n} synthetic users 'synthetic-0'..'synthetic-{last}', drawn "
             "independently with weights 1/k (Zipf) by numpy.random.default_rng(seed) in submit order"),
    "user_none": "not in the trace: <NA> (users=None)",
    "status": "not in the trace: 'unknown' (the trace does not say whether a job completed)",
    "gpu_type": "not in the trace: <NA> (any GPU type); assign_pools chooses a pool by a seeded rule",
    "num_gpus_share": ("{n} pod(s) use a share of one GPU (gpu_milli < 1000): counted as one whole GPU, which a "
                       "training job needs"),
})

# Named traces of the data catalogue (spotlab/data/catalogue.py): name -> relative paths under the data root.
_ITP = tuple(f"traces/microsoft-itp-2021/cluster{i:02d}.csv.gz" for i in range(1, 8))
TRACES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "microsoft-itp-2021": _ITP,
    **{f"microsoft-itp-2021/cluster{i:02d}": (rel,) for i, rel in enumerate(_ITP, start=1)},
    "philly-pollux": ("traces/philly-pollux/philly.csv.gz",),
    "helios-gpw": ("traces/helios-gpw/helios_data_training.csv.gz",),
    "philly-gpw": ("traces/philly-gpw/philly_data_training.csv.gz",),
    "alibaba-gpu-v2023": ("traces/alibaba-gpu-v2023/openb_pod_list_default.csv",),
})

def _strings(df: pd.DataFrame, column: str) -> np.ndarray:
    return df[column].astype(str).str.strip().to_numpy(dtype=object)


def _line_ids(path: Path, df: pd.DataFrame) -> np.ndarray:
    """``<file>:<line>`` ids for traces without job ids (header = line 1)."""
    return np.array([f"{_stem(path)}:{i + 2}" for i in df.index], dtype=object)


def _stem(path: Path) -> str:
    name = path.name
    for ext in (".gz", ".csv"):
        name = name.removesuffix(ext)
    return name


# ------------------------------------------------------------------------------------------------ formats


@dataclass(frozen=True)
class _Part:
    """One file's jobs before assembly: absolute submit times on the file's own clock."""

    jobs: pd.DataFrame  # job_id, submit, num_gpus, duration_s, gpu_type, user, status, source (object/float)
    fmt: str
    absent: tuple[str, ...]  # fields the format does not record
    dropped: Mapping[str, int]
    notes: Mapping[str, str]
    clock: Callable[[float], str]  # an absolute submit time of this file, in the file's own terms


def _frame(job_id, submit, num_gpus, duration, gpu_type, user, status, source) -> pd.DataFrame:
    """Per-job columns; a scalar (a string, or None for a field the trace lacks) is the same for every job."""
    n = len(submit)

    def full(v: object) -> np.ndarray:
        return np.full(n, v, dtype=object) if v is None or isinstance(v, str) else np.asarray(v, dtype=object)

    return pd.DataFrame({
        "job_id": np.asarray(job_id, dtype=object), "submit": np.asarray(submit, dtype=float),
        "num_gpus": np.asarray(num_gpus, dtype=np.int64), "duration_s": np.asarray(duration, dtype=float),
        "gpu_type": full(gpu_type), "user": full(user), "status": full(status), "source": full(source),
    })


def _trace_name(path: Path, known: tuple[str, ...]) -> str:
    """The trace's folder name when the file sits in a known trace folder, else the file's stem."""
    return path.parent.name if path.parent.name in known else _stem(path)


def _gpu_jobs(num_gpus: np.ndarray, dropped: dict[str, int]) -> np.ndarray:
    keep = num_gpus >= 1
    if (~keep).any():
        dropped["no GPU (GPU count 0)"] = int((~keep).sum())
    return keep


def _itp(path: Path, df: pd.DataFrame) -> _Part:
    ids = _strings(df, "job_id")
    raise_bad_rows(path, "job_id", ids == "", df["job_id"], "empty job id")
    submit = numeric_column(path, df, "submission_time")
    duration = numeric_column(path, df, "duration", nonneg="duration")
    gpus = numeric_column(path, df, "num_gpu", integer=True, nonneg="GPU count").astype(np.int64)
    dropped: dict[str, int] = {}
    keep = _gpu_jobs(gpus, dropped)
    trace = _trace_name(path, ("microsoft-itp-2021",))
    source = f"{trace}/{_stem(path)}" if trace != _stem(path) else trace
    jobs = _frame(ids[keep], submit[keep], gpus[keep], duration[keep], None, None, "unknown", source)
    return _Part(jobs, "itp", ("gpu_type", "user", "status"), dropped, {}, lambda t: f"submission_time {t:.0f} s")


def _pollux(path: Path, df: pd.DataFrame) -> _Part:
    raw = df["timestamp"].astype(str).str.strip()
    when = pd.to_datetime(raw, format="%Y-%m-%d %H:%M:%S", errors="coerce")
    raise_bad_rows(path, "timestamp", when.isna().to_numpy(), raw, "not a date-time YYYY-mm-dd HH:MM:SS")
    submit = (when - pd.Timestamp("1970-01-01")).dt.total_seconds().to_numpy(dtype=float)
    duration = numeric_column(path, df, "duration", nonneg="duration")
    gpus = numeric_column(path, df, "num_gpus", integer=True, nonneg="GPU count").astype(np.int64)
    dropped: dict[str, int] = {}
    keep = _gpu_jobs(gpus, dropped)
    trace = _trace_name(path, ("philly-pollux",))
    if "cluster" in df.columns:
        source = np.array([f"{trace}/vc-{c}" if c else trace for c in _strings(df, "cluster")], dtype=object)[keep]
    else:
        source = trace
    jobs = _frame(_line_ids(path, df)[keep], submit[keep], gpus[keep], duration[keep], None, None, "unknown",
                  source)
    return _Part(jobs, "pollux", ("gpu_type", "user", "status"), dropped, {},
                 lambda t: f"{pd.Timestamp(t, unit='s'):%Y-%m-%d %H:%M:%S} (the file's local time)")


_GPW_STATUS = {"Pass": "completed", "Failed": "failed", "Killed": "killed"}
_OPENB_STATUS = {"Succeeded": "completed", "Failed": "failed", "Running": "running", "Pending": "unknown"}


def _mapped(path: Path, df: pd.DataFrame, column: str, mapping: Mapping[str, str]) -> np.ndarray:
    raw = df[column].astype(str).str.strip()
    raise_bad_rows(path, column, (~raw.isin(list(mapping))).to_numpy(), raw,
          f"unknown value (known: {', '.join(mapping)})")
    return raw.map(mapping).to_numpy(dtype=object)


def _gpw(path: Path, df: pd.DataFrame) -> _Part:
    interval = numeric_column(path, df, "interval", nonneg="interval")
    duration = numeric_column(path, df, "run_time", nonneg="run time")
    gpus = numeric_column(path, df, "gpu_num", integer=True, nonneg="GPU count").astype(np.int64)
    status = _mapped(path, df, "new_status", _GPW_STATUS)
    users = _strings(df, "user")
    raise_bad_rows(path, "user", users == "", df["user"], "empty user")
    ids = _strings(df, "u_id")
    raise_bad_rows(path, "u_id", ids == "", df["u_id"], "empty job id")
    submit = np.cumsum(interval)
    dropped: dict[str, int] = {}
    keep = _gpu_jobs(gpus, dropped)
    trace = _trace_name(path, ("helios-gpw", "philly-gpw"))
    jobs = _frame(ids[keep], submit[keep], gpus[keep], duration[keep], None, users[keep], status[keep], trace)
    return _Part(jobs, "gpw", ("gpu_type",), dropped, {},
                 lambda t: f"{t:.0f} s after the file's first submission (the trace has no absolute time)")


def _openb(path: Path, df: pd.DataFrame) -> _Part:
    ids = _strings(df, "name")
    raise_bad_rows(path, "name", ids == "", df["name"], "empty pod name")
    created = numeric_column(path, df, "creation_time", nonneg="time")
    deleted = numeric_column(path, df, "deletion_time", nonneg="time")
    scheduled = numeric_column(path, df, "scheduled_time", nonneg="time", allow_empty=True)
    gpus = numeric_column(path, df, "num_gpu", integer=True, nonneg="GPU count").astype(np.int64)
    milli = numeric_column(path, df, "gpu_milli", integer=True, nonneg="GPU share")
    raise_bad_rows(path, "gpu_milli", milli > 1000, df["gpu_milli"], "GPU share above 1000")
    phase = df["pod_phase"].astype(str).str.strip()
    status = _mapped(path, df, "pod_phase", _OPENB_STATUS)
    run = deleted - scheduled
    raise_bad_rows(path, "deletion_time", run < 0, df["deletion_time"], "deletion before scheduled_time")
    dropped: dict[str, int] = {}
    keep = _gpu_jobs(gpus, dropped)
    # Before the first GPU pod that ended, the trace holds only pods alive at its cut (alibaba_philly_workload).
    start = observed_start(pd.DataFrame({"creation_time": created[keep], "pod_phase": phase[keep]}))
    early = keep & (created < start)
    if early.any():
        dropped["created before the first ended GPU pod (sparse prefix of survivors)"] = int(early.sum())
    never = keep & ~early & np.isnan(scheduled)
    if never.any():
        dropped["never scheduled (no scheduled_time, e.g. Pending)"] = int(never.sum())
    keep &= ~early & ~never
    spec = _strings(df, "gpu_spec")[keep] if "gpu_spec" in df.columns else np.full(int(keep.sum()), "", object)
    gpu_type = np.where(spec == "", None, spec)
    shared = int(((gpus[keep] == 1) & (milli[keep] < 1000)).sum())
    notes = {"num_gpus": SUBSTITUTES["num_gpus_share"].format(n=shared)} if shared else {}
    absent = ("user",) + (("gpu_type",) if all(g is None for g in gpu_type) else ())
    jobs = _frame(ids[keep], created[keep], gpus[keep], run[keep], gpu_type, None, status[keep],
                  _trace_name(path, ("alibaba-gpu-v2023",)))
    return _Part(jobs, "openb", absent, dropped, notes, lambda t: f"creation_time {t:.0f} s")


@dataclass(frozen=True)
class _Format:
    name: str
    required: tuple[str, ...]
    parse: Callable[[Path, pd.DataFrame], _Part]
    caveat: str


_FORMATS = (
    _Format("itp", ("job_id", "submission_time", "duration", "num_gpu"), _itp,
            "itp: no user, status, GPU type, cluster capacity or node size; the published clusters start at 600 s "
            "(shorter jobs were filtered out upstream)"),
    _Format("pollux", ("timestamp", "duration", "num_gpus"), _pollux,
            "pollux: timestamps are local date-times without a zone, read as written; the published file's "
            "September 2017 is sparse with a 68-hour gap (the ATC'19 analysis period starts 2017-10-03) and how its "
            "82k of Philly's 117k jobs were selected is not documented upstream"),
    _Format("gpw", ("u_id", "user", "gpu_num", "interval", "run_time", "new_status"), _gpw,
            "gpw: no absolute times (submit = cumulative 'interval'); which Helios cluster is not stated; "
            "CPU-only jobs (gpu_num 0) are left out"),
    _Format("openb", ("name", "num_gpu", "gpu_milli", "pod_phase", "creation_time", "deletion_time",
                      "scheduled_time"), _openb,
            "openb: 99% of the published GPU pods ask for one GPU (arrivals yes, placement no); 'running' pods were "
            "alive at the trace's cut, so their duration is a lower bound; durations are pod lifetimes from "
            "scheduling to deletion"),
)


def _recognise(path: Path, columns: Sequence[str]) -> _Format:
    have = set(columns)
    for fmt in _FORMATS:
        if have.issuperset(fmt.required):
            return fmt
    best = max(_FORMATS, key=lambda f: len(have & set(f.required)))
    if len(have & set(best.required)) >= 2:
        missing = [c for c in best.required if c not in have]
        raise TraceError(f"{path}: looks like a {best.name} job trace but lacks column(s) {', '.join(missing)}")
    known = "; ".join(f"{f.name}: {', '.join(f.required)}" for f in _FORMATS)
    raise TraceError(f"{path}: columns ({', '.join(columns) or 'none'}) match no known job-trace format ({known})")


def _read_part(path: Path) -> _Part:
    df = read_trace_csv(path)
    fmt = _recognise(path, list(df.columns))
    if df.empty:
        raise TraceError(f"{path}: no jobs (header only)")
    part = fmt.parse(path, df)
    if part.jobs.empty:
        reasons = "; ".join(f"{k}: {v}" for k, v in part.dropped.items())
        raise TraceError(f"{path}: no GPU job left ({reasons})")
    return part


# ------------------------------------------------------------------------------------------------ assembly


def check_seed(seed: object) -> int:
    """The seed of a table's random draws as an int, or a `JobTableError` if it is not a whole number >= 0."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise JobTableError(f"seed must be a whole number >= 0, got {seed!r}")
    return int(seed)


def read_job_table(path: str | Path | Sequence[str | Path], *, seed: int = 0, completed_only: bool = False,
                   users: int | None = SYNTHETIC_USERS) -> pd.DataFrame:
    """The tidy job table of one trace file, or of several on one clock (e.g. the ITP clusters).

    The format is recognised from the columns. Fields a format lacks are substituted as `SUBSTITUTES` says
    (users: ``users`` synthetic users drawn with ``seed``, or <NA> with ``users=None``) and recorded in
    ``attrs``. ``completed_only`` keeps only jobs whose status is ``completed`` (failed, killed and still
    running jobs are kept otherwise); it is an error on a trace that records no status.
    """
    seed = check_seed(seed)
    if users is not None and (isinstance(users, bool) or not isinstance(users, (int, np.integer)) or users < 1):
        raise JobTableError(f"users must be a whole number >= 1 or None, got {users!r}")
    paths = [Path(path)] if isinstance(path, (str, Path)) else [Path(p) for p in path]
    if not paths:
        raise JobTableError("no trace file given")
    parts = [_read_part(p) for p in paths]
    return _assemble(paths, parts, seed=seed, completed_only=completed_only, users=users)


def _assemble(paths: list[Path], parts: list[_Part], *, seed: int, completed_only: bool,
              users: int | None) -> pd.DataFrame:
    jobs = pd.concat([p.jobs for p in parts], ignore_index=True)
    repeated = jobs["job_id"][jobs["job_id"].duplicated(keep=False)]
    if not repeated.empty:
        first = repeated.iloc[0]
        where = paths[0] if len(paths) == 1 else ", ".join(map(str, paths))
        raise TraceError(f"{where}: job id {first!r} is in {int((repeated == first).sum())} rows; job ids must be "
                         "unique")
    dropped: dict[str, int] = {}
    for p in parts:
        for reason, n in p.dropped.items():
            dropped[reason] = dropped.get(reason, 0) + n
    if completed_only:
        blind = [str(path) for path, p in zip(paths, parts, strict=True) if "status" in p.absent]
        if blind:
            raise JobTableError(f"completed_only=True: {blind[0]} records no job status, so completed jobs cannot "
                                "be told apart; pass completed_only=False")
        done = jobs["status"] == "completed"
        if (~done).any():
            dropped["not completed (completed_only)"] = int((~done).sum())
        jobs = jobs[done]
        if jobs.empty:
            raise JobTableError(f"completed_only=True leaves no job in {', '.join(map(str, paths))}")
    jobs = jobs.sort_values("submit", kind="stable").reset_index(drop=True)
    origin = float(jobs["submit"].iloc[0])
    substitutes: dict[str, str] = {}
    missing_user = jobs["user"].isna().to_numpy()
    if missing_user.any():
        if users is None:
            substitutes["user"] = SUBSTITUTES["user_none"]
        else:
            weights = 1.0 / np.arange(1, users + 1)
            drawn = np.random.default_rng(seed).choice(users, size=int(missing_user.sum()), p=weights / weights.sum())
            jobs.loc[missing_user, "user"] = [f"synthetic-{k}" for k in drawn]
            substitutes["user"] = SUBSTITUTES["user"].format(n=users, last=users - 1)
    for field in ("status", "gpu_type"):
        if any(field in p.absent for p in parts):
            substitutes[field] = SUBSTITUTES[field]
    for p in parts:
        substitutes.update(p.notes)
    table = pd.DataFrame({
        "job_id": jobs["job_id"], "submit_time_s": jobs["submit"] - origin, "num_gpus": jobs["num_gpus"],
        "duration_s": jobs["duration_s"], "gpu_type": jobs["gpu_type"], "pool": pd.NA, "user": jobs["user"],
        "status": jobs["status"], "source": jobs["source"],
    }).astype(dict(DTYPES))
    formats = sorted({p.fmt for p in parts})
    table.attrs = {
        "files": [str(p) for p in paths],
        "formats": formats,
        "seed": seed,
        "completed_only": bool(completed_only),
        "substitutes": substitutes,
        "dropped": dropped,
        "caveats": [f.caveat for f in _FORMATS if f.name in formats],
        "origin": f"submit_time_s 0 is {parts[0].clock(origin)}" + ("" if len(parts) == 1 else
                                                                      " on the files' common clock"),
    }
    return table


def job_table(trace: str | Path, *, seed: int = 0, completed_only: bool = False,
              users: int | None = SYNTHETIC_USERS, root: str | Path | None = None,
              download: bool = True) -> pd.DataFrame:
    """The job table of a named trace (`TRACES`, found through the data catalogue) or of a file path.

    Names resolve like every dataset (``$SPOTLAB_DATA``, ``../shared/data``, else a verified download of the
    pinned source, see `spotlab.data.locate.dataset_path`); ``attrs["trace"]`` holds the name.
    """
    if isinstance(trace, str) and trace in TRACES:
        from ..data.locate import dataset_path

        paths = [dataset_path(rel, root=root, download=download) for rel in TRACES[trace]]
        table = read_job_table(paths, seed=seed, completed_only=completed_only, users=users)
        table.attrs["trace"] = trace
        return table
    if isinstance(trace, (str, Path)) and Path(trace).is_file():
        table = read_job_table(trace, seed=seed, completed_only=completed_only, users=users)
        table.attrs["trace"] = _stem(Path(trace))
        return table
    if isinstance(trace, (str, Path)) and Path(trace).is_dir():
        raise JobTableError(f"{trace} is a folder; expected a job trace file or one of {', '.join(TRACES)}")
    raise JobTableError(f"unknown job trace {str(trace)!r}: give a file or one of {', '.join(TRACES)}")


# ---------------------------------------------------------------------------------------------- transforms


def check_table(table: object) -> pd.DataFrame:
    """``table`` if it is a non-empty job table (exactly the columns `COLUMNS`), else a `JobTableError`."""
    if not isinstance(table, pd.DataFrame) or tuple(table.columns) != COLUMNS:
        got = list(table.columns) if isinstance(table, pd.DataFrame) else type(table).__name__
        raise JobTableError(f"expected a job table with columns {', '.join(COLUMNS)} (from job_table), got {got}")
    if table.empty:
        raise JobTableError("the job table is empty")
    return table


def _capacity(cluster_or_gpus: object) -> int:
    """GPUs of a cluster (anything with ``pools`` of ``nodes`` x ``gpus_per_node``) or a GPU count."""
    if isinstance(cluster_or_gpus, (int, np.integer)) and not isinstance(cluster_or_gpus, bool):
        gpus = int(cluster_or_gpus)
    else:
        try:
            gpus = sum(int(p.nodes) * int(p.gpus_per_node) for p in cluster_or_gpus.pools)
        except (AttributeError, TypeError):
            raise JobTableError(f"capacity must be a cluster or a GPU count, got {cluster_or_gpus!r}") from None
    if gpus < 1:
        raise JobTableError(f"capacity must be at least 1 GPU, got {gpus}")
    return gpus


def _counted(table: pd.DataFrame) -> pd.DataFrame:
    """The jobs that occupy the cluster: those with a pool once pools are assigned (others can never run)."""
    return table[table["pool"].notna()] if "pools" in table.attrs else table


def offered_load(table: pd.DataFrame, capacity: object) -> float:
    """Offered GPU-seconds / (capacity GPUs x arrival span): the share of the cluster the jobs ask for.

    The span runs from the first to the last submission. Once `assign_pools` has run, jobs without a pool
    (too large for every pool) are not counted: they never occupy the cluster.
    """
    table = check_table(table)
    jobs = _counted(table)
    span = float(table["submit_time_s"].max() - table["submit_time_s"].min())
    if span <= 0:
        raise JobTableError("every job is submitted at the same time: the arrival span is 0, so load is undefined")
    work = float((jobs["num_gpus"] * jobs["duration_s"]).sum())
    return work / (_capacity(capacity) * span)


def with_load(table: pd.DataFrame, load: float, capacity: object) -> pd.DataFrame:
    """The table with inter-arrival times scaled so that `offered_load` equals ``load`` on ``capacity``.

    Submit times become ``t0 + (t - t0) * scale`` (durations, GPU counts and order unchanged), so the arrival
    process keeps its shape and bursts; ``attrs["load"]`` records target, scale and the load before.
    """
    if isinstance(load, bool) or not isinstance(load, (int, float, np.integer, np.floating)) \
            or not math.isfinite(load) or load <= 0:
        raise JobTableError(f"load must be a finite number > 0, got {load!r}")
    before = offered_load(table, capacity)
    scale = before / float(load)
    out = table.copy()
    t0 = float(table["submit_time_s"].min())
    out["submit_time_s"] = t0 + (table["submit_time_s"].to_numpy() - t0) * scale
    out.attrs["load"] = {"target": float(load), "before": before, "time_scale": scale,
                         "capacity_gpus": _capacity(capacity), "jobs_counted": len(_counted(table)),
                         "definition": "offered GPU-seconds / (capacity GPUs x (last - first submission))"}
    return out


def with_multi_gpu_share(table: pd.DataFrame, share: float, *, seed: int = 0,
                         counts: Mapping[int, float] | None = None) -> pd.DataFrame:
    """The table with ``round(share * n)`` multi-GPU jobs, so placement has something to decide.

    To raise the share, randomly chosen one-GPU jobs get a GPU count drawn from the table's own multi-GPU counts
    (or from ``counts``: GPU count -> weight); to lower it, randomly chosen multi-GPU jobs get one GPU. Durations
    are kept, so GPU-hours change: apply `with_load` afterwards. Seeded (``numpy.random.default_rng(seed)``) and
    recorded in ``attrs["multi_gpu_share"]``. Must run before `assign_pools` (pools depend on GPU counts).
    """
    table = check_table(table)
    seed = check_seed(seed)
    if isinstance(share, bool) or not isinstance(share, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(share) <= 1.0:
        raise JobTableError(f"multi_gpu_share must be a number in [0, 1], got {share!r}")
    if table["pool"].notna().any():
        raise JobTableError("multi_gpu_share changes GPU counts, so it must come before assign_pools")
    gpus = table["num_gpus"].to_numpy().copy()
    n, multi = len(gpus), gpus > 1
    target = int(round(float(share) * n))
    rng = np.random.default_rng(seed)
    if counts is not None:
        if not isinstance(counts, Mapping) or not counts or any(
                isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2 or not (float(w) > 0)
                for k, w in counts.items()):
            raise JobTableError(f"counts must map GPU counts >= 2 to weights > 0, got {counts!r}")
        values = np.array(list(counts), dtype=np.int64)
        weights = np.array([float(w) for w in counts.values()])
        weights /= weights.sum()
        origin = {int(k): float(w) for k, w in counts.items()}
    else:
        values, weights, origin = gpus[multi], None, "the table's own multi-GPU counts"
    k0 = int(multi.sum())
    if target > k0:
        if values.size == 0:
            raise JobTableError("the table has no multi-GPU job to draw GPU counts from; pass counts={8: 1.0, ...}")
        chosen = rng.choice(np.flatnonzero(~multi), size=target - k0, replace=False)
        gpus[chosen] = rng.choice(values, size=chosen.size, p=weights)
    elif target < k0:
        chosen = rng.choice(np.flatnonzero(multi), size=k0 - target, replace=False)
        gpus[chosen] = 1
    else:
        chosen = np.array([], dtype=np.int64)
    out = table.copy()
    out["num_gpus"] = gpus.astype(np.int64)
    out.attrs["multi_gpu_share"] = {"target": float(share), "before": k0 / n, "after": target / n,
                                    "jobs_changed": int(chosen.size), "seed": seed, "counts_from": origin}
    return out


# ------------------------------------------------------------------------------------------------- windows


def job_windows(table: pd.DataFrame, size: int = 256, split: Sequence[str] = ("train", "validation", "test"),
                fractions: Sequence[float] = (0.6, 0.2, 0.2)) -> dict[str, list[pd.DataFrame]]:
    """Consecutive windows of ``size`` jobs, the splits cut by time so that they never overlap.

    The table (sorted by submit time) is cut at ``fractions`` of its jobs, in the order of ``split``; each split
    is as many whole windows of ``size`` jobs as fit before its cut, and starts strictly after the previous
    split's last job (jobs submitted at that same instant are skipped), so a split's remainder under ``size``
    goes to the next split and only the last split's remainder is left out. Each window keeps the table's times
    and ``attrs``, plus ``attrs["window"]`` (split, index, table rows).
    """
    table = check_table(table)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise JobTableError(f"size must be a whole number >= 1, got {size!r}")
    names, fracs = list(split), [float(f) for f in fractions]
    if not names or len(names) != len(fracs) or len(set(names)) != len(names):
        raise JobTableError(f"split and fractions must have the same length and distinct names, got {split!r}, "
                            f"{fractions!r}")
    if any(not f > 0 for f in fracs) or abs(sum(fracs) - 1.0) > 1e-9:
        raise JobTableError(f"fractions must be > 0 and sum to 1, got {fractions!r}")
    times = table["submit_time_s"].to_numpy()
    if np.any(np.diff(times) < 0):
        raise JobTableError("the job table is not sorted by submit time")
    n = len(table)
    bounds = np.rint(np.cumsum([0.0] + fracs) * n).astype(int)
    out: dict[str, list[pd.DataFrame]] = {}
    lo = 0
    for k, name in enumerate(names):
        hi = int(bounds[k + 1])
        if k > 0:  # strictly after the previous split's last submission
            lo = max(lo, int(np.searchsorted(times, times[lo - 1], side="right")))
        count = max(hi - lo, 0) // size
        if count == 0:
            raise JobTableError(f"split {name!r} holds {max(hi - lo, 0)} job(s), fewer than one window of {size}; "
                                "use smaller windows or other fractions")
        windows = []
        for w in range(count):
            a, b = lo + w * size, lo + (w + 1) * size
            frame = table.iloc[a:b].reset_index(drop=True)
            frame.attrs["window"] = {"split": name, "index": w, "rows": (a, b), "size": size}
            windows.append(frame)
        out[name] = windows
        lo = lo + count * size
    return out
