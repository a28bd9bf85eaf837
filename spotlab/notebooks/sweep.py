"""Run one notebook over a grid of parameters: `spotlab sweep NOTEBOOK --grid GRID.yaml`.

A sweep is resumable because every point keeps its own result on disk: the point with parameters
`p` runs in `OUT/points/<point_hash(p)>/`, gets that folder as its `out_dir` parameter, and ends with
`record.json` there (written atomically). A later run of the same sweep skips the points whose record
says `done`, skips the `failed` ones unless `retry_failed`, and runs every point without a record
(never started, interrupted, or its worker died). The collected table (one row per point) is rebuilt
from the records at the end of every run, so nothing is lost when a run stops halfway.

Grid file (YAML)::

    alpha: [0.5, 1.0, 2.0]     # a parameter of the notebook -> the values to try
    seed: [0, 1]               # points = the cartesian product (here 3 x 2 = 6)
    fixed:                     # optional: the same value at every point
      quick: true

Every name must be defined in the notebook's cell tagged `parameters`; `out_dir` is set by the sweep.
A point's key hashes only its swept values, so changing a `fixed` value (e.g. to fix what made a point
fail, then `retry_failed`) keeps the finished points; each record keeps the full parameters it ran with.

Results: a notebook that writes `sweep_result.json` (a flat JSON object of numbers, strings, booleans or
nulls) into its `out_dir` gets those values as columns of the table; otherwise the row has only the
parameters, status, error and seconds.

Where points run: one at a time (`jobs=1`, the default, since notebooks often parallelise inside), in
`jobs` local processes (joblib), or on a Dask distributed cluster (`scheduler="tcp://HOST:PORT"`). The
Dask workers must see `OUT` and the notebook at the same paths (a shared filesystem) and have spotlab
installed: each task writes its own record. A task whose worker dies is run again on another worker (up
to the scheduler's `distributed.scheduler.allowed-failures`); a point that still has no record is run
by the next sweep. While a point runs, its folder holds a `claim` file (host, pid) touched every
second; a second attempt at the same point (a rescheduled task, or an overlapping run of the sweep)
waits until that claim is released (then it returns the record) or its owner is dead: a process of the
same hostname that is gone, or a claim untouched for `STALE_S` seconds. So a point is never executed
twice unless its first attempt died before finishing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import SweepError
from .execute import ROOT, error_line, kernel_manager_logging_to

RESULT_FILE = "sweep_result.json"
RECORD_FILE = "record.json"
CLAIM_FILE = "claim"
KERNEL_LOG = "kernel.log"  # the kernel process's own output, not the notebook's
HEARTBEAT_S = 1.0  # how often a running point touches its claim
STALE_S = 10.0  # a claim untouched this long belongs to a dead attempt
RESERVED = ("out_dir",)  # set by the sweep for each point
Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Grid:
    """Swept values (name -> tuple of values, in file order) and the values every point shares."""

    swept: Mapping[str, tuple]
    fixed: Mapping[str, Any]

    def points(self) -> list[dict[str, Any]]:
        """The swept values of every point, in the order of the cartesian product."""
        names = list(self.swept)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.swept[n] for n in names))]

    def names(self) -> list[str]:
        return [*self.swept, *self.fixed]


@dataclass(frozen=True)
class SweepResult:
    """What a sweep run left on disk: the table of all points and how this run went."""

    table: pd.DataFrame
    table_path: Path
    out_dir: Path
    done: int  # points with a `done` record (from this run or an earlier one)
    failed: int  # points with a `failed` record
    missing: int  # points still without a record (a lost task or a crashed worker pool)
    ran: int  # points executed by this run
    skipped: int  # points not executed because they already had a record
    stale: int  # done points that ran with other `fixed` values than the current grid's

    @property
    def ok(self) -> bool:
        return self.failed == 0 and self.missing == 0

    def summary(self) -> str:
        """A few lines for a person: counts, then each failed or missing point and why."""
        n = len(self.table)
        lines = [f"{n} points: {self.done} done, {self.failed} failed, {self.missing} missing "
                 f"(ran {self.ran}, skipped {self.skipped} already recorded); table: {self.table_path}"]
        if self.stale:
            lines.append(f"note: {self.stale} done points ran with other `fixed` values than the grid's now "
                         f"(see their params in {self.out_dir / 'points'}/*/{RECORD_FILE})")
        bad = self.table[self.table["status"] != "done"]
        for _, row in bad.iterrows():
            rec = read_record(self.out_dir / "points" / row["hash"])
            params = rec["params"] if rec else {}
            lines.append(f"  {row['status']} {row['hash']} {json.dumps(params, default=str)}: {row['error']}")
        if self.failed:
            lines.append("rerun with --retry-failed (retry_failed=True) to run the failed points again")
        if self.missing:
            lines.append("rerun the same sweep to run the missing points")
        return "\n".join(lines)


def point_hash(params: Mapping[str, Any]) -> str:
    """A stable key of a point: the same values give the same folder in every run and on every host."""
    text = json.dumps(dict(params), sort_keys=True, separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _check_value(where: str, value: Any) -> None:
    """Papermill passes values as Python literals and records keep them as JSON: allow only what both hold."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return
    if isinstance(value, list):
        for v in value:
            _check_value(where, v)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise SweepError(f"{where}: mapping keys must be strings, got {k!r}")
            _check_value(where, v)
        return
    raise SweepError(f"{where}: {value!r} ({type(value).__name__}) is not a number, string, boolean, null, list "
                     "or mapping (quote dates and other special values)")


def _yaml_loader():
    import yaml

    class Loader(yaml.SafeLoader):
        """A repeated key in a grid is a mistake that the plain loader would hide by keeping the last one."""

    def mapping(loader, node, deep=False):
        keys = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in keys:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            keys.add(key)
        return loader.construct_mapping(node, deep=deep)

    Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return yaml, Loader


def grid_from_mapping(data: Any, source: str = "the grid") -> Grid:
    """Check a grid given as a mapping (what the YAML file holds) and freeze it."""
    if not isinstance(data, Mapping):
        raise SweepError(f"{source} must be a mapping of parameter names to lists of values (plus an optional "
                         f"`fixed:` mapping), got {type(data).__name__}")
    fixed = data.get("fixed", {}) or {}
    if not isinstance(fixed, Mapping):
        raise SweepError(f"{source}: `fixed` must be a mapping of parameter names to values, got {fixed!r}")
    swept: dict[str, tuple] = {}
    for name, values in data.items():
        if name == "fixed":
            continue
        if not isinstance(name, str) or not name.isidentifier():
            raise SweepError(f"{source}: {name!r} is not a parameter name")
        if not isinstance(values, list):
            raise SweepError(f"{source}: parameter {name!r} must be a list of values, got {values!r} "
                             "(put a single value under `fixed:`)")
        if not values:
            raise SweepError(f"{source}: parameter {name!r} has an empty list of values")
        for v in values:
            _check_value(f"{source}: parameter {name!r}", v)
        seen: set[str] = set()
        for v in values:
            key = json.dumps(v, sort_keys=True)
            if key in seen:
                raise SweepError(f"{source}: parameter {name!r} lists the value {v!r} twice")
            seen.add(key)
        swept[name] = tuple(values)
    for name, value in fixed.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise SweepError(f"{source}: {name!r} under `fixed` is not a parameter name")
        if name in swept:
            raise SweepError(f"{source}: {name!r} is both swept and fixed")
        _check_value(f"{source}: fixed {name!r}", value)
    if not swept:
        raise SweepError(f"{source} sweeps no parameter: add at least one `name: [value, ...]`")
    for name in RESERVED:
        if name in swept or name in fixed:
            raise SweepError(f"{source}: {name!r} is set by the sweep (each point's own folder); remove it")
    return Grid(swept=swept, fixed=dict(fixed))


def load_grid(path: str | Path) -> Grid:
    """Read and check a grid YAML file (format in the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise SweepError(f"grid file {path} not found")
    try:
        yaml, Loader = _yaml_loader()
    except ImportError:
        raise SweepError("reading a grid needs PyYAML: pip install 'spotlab[dist]'") from None
    try:
        data = yaml.load(path.read_text(), Loader=Loader)
    except yaml.YAMLError as exc:
        raise SweepError(f"grid file {path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        raise SweepError(f"grid file {path} is empty")
    return grid_from_mapping(data, f"grid file {path}")


def prepare_notebook(notebook: str | Path, out_dir: Path) -> tuple[Path, dict[str, Any]]:
    """An executable .ipynb of the notebook inside `out_dir` (workers read it there) and its parameters."""
    import jupytext
    import papermill as pm

    src = Path(notebook)
    if not src.is_file():
        raise SweepError(f"notebook {src} not found")
    if src.suffix not in (".py", ".ipynb"):
        raise SweepError(f"notebook {src} must be a jupytext percent .py file or an .ipynb")
    try:
        nb = jupytext.read(src)
    except Exception as exc:
        raise SweepError(f"cannot read notebook {src}: {exc}") from None
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    out_dir.mkdir(parents=True, exist_ok=True)
    ipynb = out_dir / f"{src.stem}.ipynb"
    tmp = ipynb.with_name(f".{uuid.uuid4().hex}.{ipynb.name}")
    jupytext.write(nb, tmp, fmt="ipynb")
    os.replace(tmp, ipynb)  # a task of an earlier, still running sweep may be reading the old copy
    params = pm.inspect_notebook(str(ipynb))
    if not params:
        raise SweepError(f"notebook {src} has no cell tagged `parameters`: a sweep sets its values there")
    return ipynb, params


def read_record(point_dir: Path) -> dict | None:
    """The point's record, or None when it has none (a torn file cannot exist: records are renamed in)."""
    try:
        rec = json.loads((Path(point_dir) / RECORD_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) and rec.get("status") in ("done", "failed") else None


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _fs_now(folder: Path) -> float:
    """The filesystem's clock, so claim ages compare like with like on a shared disk with skewed hosts."""
    probe = folder / f".now.{uuid.uuid4().hex}"
    probe.touch()
    try:
        return probe.stat().st_mtime
    finally:
        probe.unlink(missing_ok=True)


def _try_claim(claim: Path, token: str) -> bool:
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(token)
    return True


def _holder_gone(token: str) -> bool:
    """True when the claim was taken by a process of this host that no longer runs (no need to wait)."""
    host, _, rest = token.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host (or a claim still being written): only its age tells
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rpartition(")")[2].split()[0] == "Z"  # a zombie runs nothing
        except (FileNotFoundError, ProcessLookupError):
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def _break_dead_claim(claim: Path) -> None:
    """Remove the claim of an attempt that died (its process is gone, or it stopped heart-beating)."""
    try:
        token = claim.read_text()
        age = _fs_now(claim.parent) - claim.stat().st_mtime
    except FileNotFoundError:
        return
    if age <= STALE_S and not _holder_gone(token):
        return
    grave = claim.with_name(f".{CLAIM_FILE}.dead.{uuid.uuid4().hex}")
    try:
        os.rename(claim, grave)  # of several waiters, one wins
    except FileNotFoundError:
        return
    if grave.read_text() != token:  # a live attempt claimed the point meanwhile: give its claim back
        with contextlib.suppress(FileExistsError):
            os.link(grave, claim)
    grave.unlink(missing_ok=True)


def _heartbeat(claim: Path, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        with contextlib.suppress(OSError):
            os.utime(claim)


def _read_result(point_dir: Path) -> dict[str, Scalar]:
    path = point_dir / RESULT_FILE
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise SweepError(f"{RESULT_FILE} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SweepError(f"{RESULT_FILE} must hold a JSON object, got {type(data).__name__}")
    for k, v in data.items():
        if not (isinstance(v, (str, int, float, bool)) or v is None):
            raise SweepError(f"{RESULT_FILE} must be flat: key {k!r} holds a {type(v).__name__}")
    return data


def run_point(ipynb: str, params: dict[str, Any], key: str, point_dir: str, cwd: str,
              retry_failed: bool = False) -> dict:
    """Execute one point and write its record; runs in the sweep's process, a joblib worker or a Dask worker.

    Returns {"record": ..., "ran": bool}. A point that another attempt already finished is not run again
    (`ran` False): that makes a rescheduled or duplicated task harmless.
    """
    import papermill as pm

    folder = Path(point_dir)
    folder.mkdir(parents=True, exist_ok=True)
    claim = folder / CLAIM_FILE
    token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
    first = read_record(folder)
    to_retry = first if first and first["status"] == "failed" and retry_failed else None

    def settled(rec: dict | None) -> bool:  # done, or failed in another attempt than the one to retry
        return bool(rec) and (rec["status"] == "done" or to_retry is None or rec != to_retry)

    while True:
        rec = read_record(folder)
        if settled(rec):
            return {"record": rec, "ran": False}
        if _try_claim(claim, token):
            break
        _break_dead_claim(claim)
        time.sleep(0.25)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(claim, stop), daemon=True)
    beat.start()
    try:
        rec = read_record(folder)  # finished between our last look and the claim
        if settled(rec):
            return {"record": rec, "ran": False}
        (folder / RESULT_FILE).unlink(missing_ok=True)  # an earlier attempt's result must not leak in
        record: dict[str, Any] = {"hash": key, "params": params, "status": "done", "error": None,
                                  "notebook": Path(ipynb).stem, "host": socket.gethostname(),
                                  "attempt": token, "started": _now()}
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(ipynb, str(folder / Path(ipynb).name), parameters={**params, "out_dir": str(folder)},
                                cwd=cwd, kernel_name="python3", progress_bar=False, log_output=False,
                                kernel_manager_class=kernel_manager_logging_to(folder / KERNEL_LOG))
            record["results"] = _read_result(folder)
        except Exception as exc:  # the notebook's failure is this point's result, not the sweep's
            record.update(status="failed", error=error_line(exc), results={})
        record.update(seconds=round(time.perf_counter() - t0, 3), finished=_now())
        _write_json_atomic(folder / RECORD_FILE, record)
        return {"record": record, "ran": True}
    finally:
        stop.set()
        beat.join()
        with contextlib.suppress(OSError):
            if claim.read_text() == token:
                claim.unlink()


def _check_table_path(path: Path) -> None:
    import importlib.util

    if path.suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
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


def _write_table(table: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{uuid.uuid4().hex}.{path.name}")  # keeps the suffix: pandas infers compression
    if path.suffix == ".parquet":
        table.to_parquet(tmp, index=False)
    else:
        table.to_csv(tmp, index=False)
    os.replace(tmp, path)


def _validate(grid: Grid, nb_params: Mapping[str, Any], notebook: Path) -> None:
    unknown = [n for n in grid.names() if n not in nb_params]
    if unknown:
        raise SweepError(f"notebook {notebook.name} does not define {', '.join(map(repr, unknown))} in its "
                         f"`parameters` cell (it defines: {', '.join(nb_params)})")
    if "out_dir" not in nb_params:
        raise SweepError(f"notebook {notebook.name} has no `out_dir` in its `parameters` cell: the sweep gives "
                         "each point its own folder through it")


def _run_dask(todo: list[tuple[str, dict]], args: tuple, scheduler: str, retries: int, bar, on_done) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise SweepError("a Dask scheduler needs dask[distributed]: pip install 'spotlab[dist]'") from None
    host, _, port = scheduler.partition("://")[2].rpartition(":")
    if scheduler.startswith("tcp://") and port.isdigit():  # a refused connection fails now, not after the timeout
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
        except OSError as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    try:
        client = Client(scheduler, timeout="20s")
    except (OSError, TimeoutError) as exc:
        raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    with client:
        ipynb, out, cwd, retry_failed = args
        futures = {client.submit(run_point, ipynb, params, key, str(out / "points" / key), cwd, retry_failed,
                                 pure=False, retries=retries, key=f"sweep-point-{key}-{uuid.uuid4().hex[:8]}"): key
                   for key, params in todo}
        try:
            for fut in as_completed(futures):
                key = futures[fut]
                try:
                    on_done(key, fut.result())
                except Exception as exc:  # e.g. KilledWorker: the point itself keeps killing workers
                    on_done(key, None, exc)
                bar.update()
        except BaseException:
            client.cancel(list(futures))  # queued points stop; running ones finish and write their records
            raise


def _run_local(todo: list[tuple[str, dict]], args: tuple, jobs: int, bar, on_done) -> None:
    ipynb, out, cwd, retry_failed = args
    if jobs == 1:
        for key, params in todo:
            on_done(key, run_point(ipynb, params, key, str(out / "points" / key), cwd, retry_failed))
            bar.update()
        return
    from joblib import Parallel, delayed
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    def task(key: str, params: dict) -> tuple[str, dict]:
        return key, run_point(ipynb, params, key, str(out / "points" / key), cwd, retry_failed)

    try:
        for key, outcome in Parallel(n_jobs=jobs, return_as="generator_unordered")(
                delayed(task)(key, params) for key, params in todo):
            on_done(key, outcome)
            bar.update()
    except TerminatedWorkerError as exc:  # the pool is gone; records already written stay, the rest is missing
        bar.write(f"spotlab: a worker process died ({' '.join(str(exc).split())[:300]}); "
                  "the points without a record run at the next sweep")


class _CellProgress:
    """The sweep's bar in points, fractions included: a running point counts the share of its notebook's cells
    papermill has finished (read from the executed copy it saves after each cell), so the bar moves while the
    first points run instead of sitting at 0% for minutes. Reads happen on a background thread, once a second,
    and only for files that changed."""

    def __init__(self, bar, out: Path, stem: str, keys: list[str]) -> None:
        self.bar, self.out, self.stem, self.keys = bar, out, stem, keys
        self.finished: set[str] = set()
        self.partial: dict[str, tuple[float, float]] = {}  # key -> (mtime seen, fraction done)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        if not bar.disable:
            self.thread.start()

    def _fraction(self, key: str) -> float:
        path = self.out / "points" / key / f"{self.stem}.ipynb"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return 0.0
        seen = self.partial.get(key)
        if seen and seen[0] == mtime:
            return seen[1]
        try:
            cells = [c for c in json.loads(path.read_text()).get("cells", []) if c.get("cell_type") == "code"]
        except (OSError, ValueError, AttributeError):
            return seen[1] if seen else 0.0
        done = sum(1 for c in cells if c.get("metadata", {}).get("papermill", {}).get("status") == "completed")
        frac = min(done / len(cells), 0.99) if cells else 0.0
        self.partial[key] = (mtime, frac)
        return frac

    def _show(self) -> None:
        with self.lock:
            value = len(self.finished) + sum(self._fraction(k) for k in self.keys if k not in self.finished)
            self.bar.n = round(min(value, len(self.keys)), 2)
            self.bar.refresh()

    def _poll(self) -> None:
        while not self.stop.wait(1.0):
            with contextlib.suppress(Exception):
                self._show()

    def done(self, key: str) -> None:
        with self.lock:
            self.finished.add(key)
        self._show()

    def update(self, n: int = 1) -> None:  # what the runners call after each point: `done` already counted it
        self._show()

    def write(self, text: str) -> None:
        self.bar.write(text)

    def set_postfix(self, **kw: Any) -> None:
        self.bar.set_postfix(**kw)

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2.0)


def run_sweep(notebook: str | Path, grid: Grid | Mapping | str | Path, out_dir: str | Path, jobs: int = 1,
              scheduler: str | None = None, retry_failed: bool = False, progress: bool | None = True,
              table: str | Path | None = None, retries: int = 0) -> SweepResult:
    """Run the points of `grid` that have no record yet (and the failed ones if `retry_failed`).

    Everything that can be wrong with the inputs is checked before any point runs. `table` defaults to
    `out_dir/sweep.csv` (a `.parquet` name writes Parquet); `retries` is Dask's per-task retry count for
    errors outside the notebook (a failing notebook is a `failed` point, not a task error).
    """
    from tqdm.auto import tqdm


    if isinstance(grid, Grid):
        pass
    elif isinstance(grid, Mapping):
        grid = grid_from_mapping(grid)
    else:
        grid = load_grid(grid)
    if jobs < 1:
        raise SweepError(f"jobs must be >= 1, got {jobs}")
    if scheduler is not None and jobs != 1:
        raise SweepError("give either jobs (local processes) or a Dask scheduler, not both")
    if scheduler is not None and "://" not in scheduler:
        raise SweepError(f"scheduler address {scheduler!r} should look like tcp://HOST:PORT")
    out = Path(out_dir).resolve()
    table_path = Path(table) if table is not None else out / "sweep.csv"
    _check_table_path(table_path)
    src = Path(notebook)
    if not src.is_file():  # before creating out_dir
        raise SweepError(f"notebook {src} not found")
    ipynb, nb_params = prepare_notebook(src, out)
    _validate(grid, nb_params, src)

    todo: list[tuple[str, dict]] = []
    skipped = 0
    for swept in grid.points():
        key = point_hash(swept)
        rec = read_record(out / "points" / key)
        if rec and (rec["status"] == "done" or not retry_failed):
            skipped += 1
        else:
            todo.append((key, {**grid.fixed, **swept}))
    ran = 0
    failed_now = 0

    def on_done(key: str, outcome: dict | None, exc: BaseException | None = None) -> None:
        nonlocal ran, skipped, failed_now
        if outcome is None:
            folder = out / "points" / key
            if read_record(folder) is None:
                params = dict(todo_params[key])
                _write_json_atomic(folder / RECORD_FILE, {
                    "hash": key, "params": params, "status": "failed", "error": error_line(exc),
                    "notebook": src.stem, "host": None, "attempt": f"sweep:{uuid.uuid4().hex}",
                    "started": None, "finished": _now(),
                    "seconds": None, "results": {}})
            failed_now += 1
        elif outcome["ran"]:
            ran += 1
            failed_now += outcome["record"]["status"] == "failed"
        else:
            skipped += 1
        bar.done(key)
        bar.set_postfix(failed=failed_now, refresh=False)

    todo_params = dict(todo)
    args = (str(ipynb), out, str(ROOT), retry_failed)
    disable = (None if progress is None else not progress) if todo else True
    with tqdm(total=len(todo), desc="sweep", unit="pt", disable=disable,
              bar_format="{l_bar}{bar}| {n:.1f}/{total} points [{elapsed}<{remaining}{postfix}]") as tq:
        bar = _CellProgress(tq, out, Path(ipynb).stem, [k for k, _ in todo])
        try:
            if todo:
                if scheduler is not None:
                    _run_dask(todo, args, scheduler, retries, bar, on_done)
                else:
                    _run_local(todo, args, jobs, bar, on_done)
        finally:
            bar.close()

    tab = collect_table(grid, out)
    _write_table(tab, table_path)
    counts = tab["status"].value_counts()
    stale = 0
    for swept in grid.points():
        rec = read_record(out / "points" / point_hash(swept))
        if rec and rec["status"] == "done":
            stale += any(rec.get("params", {}).get(k) != v for k, v in grid.fixed.items())
    return SweepResult(table=tab, table_path=table_path, out_dir=out, done=int(counts.get("done", 0)),
                       failed=int(counts.get("failed", 0)), missing=int(counts.get("missing", 0)), ran=ran,
                       skipped=skipped, stale=stale)
