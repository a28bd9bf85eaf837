"""Run one notebook over a grid of parameters: `spotlab sweep NOTEBOOK --grid GRID.yaml` (`run_sweep`).

Why: an experiment's notebook run at many parameter values (seeds, settings), each point for minutes,
on one machine or a cluster, without losing work when the run, a worker or the machine stops.

What: the point with swept values `p` runs in `OUT/points/<point_hash(p)>/`, gets that folder as its
`out_dir` parameter, and ends with `record.json` there (written atomically; `record.py`). Its notebook
may write results there for the table (`point.py`); the grid file's format is in `grid.py`.

Resumable: a run skips the points whose record says `done`, skips the `failed` ones unless
`retry_failed`, and runs every point without a record (never started, interrupted, or its worker died).
The table (one row per point, `table.py`) is rebuilt from the records at the end of every run, so
nothing is lost when a run stops halfway, and everything that can be wrong with the inputs is checked
before any point runs.

At least once: a point whose attempt died before writing its record is run again (by the back end
that reschedules it, or by the next sweep), so a point may start more than once but ends with one
record. While an attempt runs it holds the point's lease (`leases.py`): a second attempt waits for it
rather than running the point beside it, so a point is never executed twice unless its first attempt
died before finishing.

Where points run: one at a time or in local processes, or on a Dask distributed cluster (the back ends
`reproduce` uses too, `notebooks/backends/`). All of them share nothing but the output folder: every worker writes its own
points' records there (on a cluster, a filesystem all workers see at the same path), and the sweep's
process reads them (it writes one itself only for a point whose task the cluster gave up on, so that
the point shows as failed). The progress bar counts the cells of running points (`progress.py`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...errors import SweepError
from ...input_paths import input_file
from ..execute import ROOT, error_line
from ..backends.dask_cluster import run_dask
from ..backends.local import run_local
from ..backends.task import Task
from .grid import Grid, check_against_notebook, grid_from_mapping, load_grid, point_hash
from .point import NOTEBOOK, prepare_notebook, run_point
from .progress import CellProgress
from .record import RECORD_FILE, read_record, utc_now, write_json_atomic
from .table import check_table_path, collect_table, write_table


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


def run_sweep(notebook: str | Path, grid: Grid | Mapping | str | Path, out_dir: str | Path, jobs: int = 1,
              scheduler: str | None = None, retry_failed: bool = False, progress: bool | None = True,
              table: str | Path | None = None, retries: int = 0) -> SweepResult:
    """Run the points of `grid` that have no record yet (and the failed ones if `retry_failed`).

    Everything that can be wrong with the inputs is checked before any point runs. `table` defaults to
    `out_dir/sweep.csv` (a `.parquet` name writes Parquet); `retries` is Dask's per-task retry count for
    errors outside the notebook (a failing notebook is a `failed` point, not a task error).
    """
    from ...progress import tqdm_bar

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
    check_table_path(table_path)
    src = input_file(notebook, NOTEBOOK, SweepError)  # before creating out_dir
    ipynb, nb_params = prepare_notebook(src, out)
    check_against_notebook(grid, nb_params, src)

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
        record_outcome(key, outcome, exc)
        bar.update()

    def record_outcome(key: str, outcome: dict | None, exc: BaseException | None) -> None:
        nonlocal ran, skipped, failed_now
        if outcome is None:
            folder = out / "points" / key
            if read_record(folder) is None:
                params = dict(todo_params[key])
                write_json_atomic(folder / RECORD_FILE, {
                    "hash": key, "params": params, "status": "failed", "error": error_line(exc),
                    "notebook": src.stem, "host": None, "attempt": f"sweep:{uuid.uuid4().hex}",
                    "started": None, "finished": utc_now(),
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
    tasks = [Task(key, run_point, (str(ipynb), params, key, str(out / "points" / key), str(ROOT), retry_failed))
             for key, params in todo]
    with tqdm_bar(total=len(todo), desc="sweep", unit="pt", enabled=progress if todo else False,
              bar_format="{l_bar}{bar}| {n:.1f}/{total} points [{elapsed}<{remaining}{postfix}]") as tq:
        bar = CellProgress(tq, out, Path(ipynb).stem, [k for k, _ in todo])
        try:
            if todo:
                if scheduler is not None:
                    run_dask(tasks, scheduler, on_done, retries=retries, error=SweepError, name="sweep-point")
                else:
                    run_local(tasks, on_done, jobs, warn=bar.write)
        finally:
            bar.close()

    tab = collect_table(grid, out)
    write_table(tab, table_path)
    counts = tab["status"].value_counts()
    stale = 0
    for swept in grid.points():
        rec = read_record(out / "points" / point_hash(swept))
        if rec and rec["status"] == "done":
            stale += any(rec.get("params", {}).get(k) != v for k, v in grid.fixed.items())
    return SweepResult(table=tab, table_path=table_path, out_dir=out, done=int(counts.get("done", 0)),
                       failed=int(counts.get("failed", 0)), missing=int(counts.get("missing", 0)), ran=ran,
                       skipped=skipped, stale=stale)
