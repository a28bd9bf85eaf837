"""Execute every notebook with papermill: `spotlab reproduce` (what `make reproduce` runs).

Notebooks live in `notebooks/` as jupytext percent files (diff-friendly, no outputs). Each is
converted to an .ipynb in `build/notebooks/`, executed by papermill into `build/executed/` with the
parameters `out_dir` (figures + data) and `quick`, and never executed in place. A notebook that
already ran with the same source and parameters is skipped unless `--force`, so an interrupted
reproduction resumes where it stopped.

Where: `jobs` notebooks at a time on local threads (each notebook runs in its own kernel process), or each
notebook a task on a Dask distributed cluster (`scheduler`, the back ends `spotlab sweep` uses too,
`backends/`); the workers must see the notebooks, `build` and `out` at the same paths. A notebook holds a
lease while it runs (`build/executed/NAME.claim`), so a rerun while an interrupted run's notebook still runs on
a worker waits for it instead of running it beside it. Each record says where its notebook ran.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

from ..errors import ExperimentError
from .backends.dask_cluster import run_dask, worker_address
from .backends.leases import lease
from .backends.local import run_local
from .backends.task import Task
from .cpu_meter import ProcessTreeCPU
from .execute import ROOT, error_line, kernel_manager_logging_to


def notebook_sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("[0-9]*.py") if p.is_file())


def run_notebook(src: Path, build: Path, out_dir: Path, quick: bool, extra: dict | None = None,
                 force: bool = False, progress: bool | None = False, html_dir: Path | None = None,
                 threads: int | None = None, cells_to: str | None = None) -> dict:
    """Convert and execute one notebook; returns a record with its status and wall time.

    `progress` shows a bar of the notebook's cells (None: when stderr is a terminal); `html_dir` gets a
    readable HTML copy of the executed notebook, figures included (also for a notebook that is not re-run);
    `threads` caps the kernel's numerical thread pools and `cells_to` sends its joblib work to that Dask scheduler
    (`execute.kernel_manager_logging_to`)."""
    import jupytext
    import papermill as pm

    build, out_dir = Path(build).resolve(), Path(out_dir).resolve()  # papermill runs the kernel from ROOT
    params = {"out_dir": str(out_dir), "quick": bool(quick), **(extra or {})}
    key = hashlib.sha256(src.read_bytes() + json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
    nb_dir, ex_dir = build / "notebooks", build / "executed"
    nb_dir.mkdir(parents=True, exist_ok=True)
    ex_dir.mkdir(parents=True, exist_ok=True)
    done_marker = ex_dir / f"{src.stem}.{key}.done"
    where = worker_address() or "local"
    started_at = time.time()

    def settled() -> bool:  # ran already (with `force`: in another attempt that finished after this one began)
        try:
            mtime = done_marker.stat().st_mtime
        except FileNotFoundError:
            return False
        return not force or mtime >= started_at

    with lease(ex_dir / f"{src.stem}.claim", settled) as token:
        if token is None:
            return _cached(src, done_marker, ex_dir, html_dir)
        ipynb = nb_dir / f"{src.stem}.ipynb"
        jupytext.write(jupytext.read(src), ipynb)
        started = time.perf_counter()
        if progress is None:
            progress = sys.stderr.isatty()
        bar = {"desc": f"  {src.stem}", "leave": False, "file": sys.stderr, "dynamic_ncols": True} if progress else False
        with ProcessTreeCPU() as cpu:
            manager = kernel_manager_logging_to(ex_dir / f"{src.stem}.kernel.log", threads, cwd=ROOT,
                                                cells_to=cells_to, on_launch=cpu.watch)
            pm.execute_notebook(str(ipynb), str(ex_dir / f"{src.stem}.ipynb"), parameters=params,
                                kernel_name="python3", progress_bar=bar, kernel_manager_class=manager)
        seconds = time.perf_counter() - started
        done_marker.write_text(json.dumps({"params": params, "seconds": seconds, "cpu_seconds": cpu.seconds,
                                           "where": where}))
    if html_dir is not None:
        write_html(ex_dir / f"{src.stem}.ipynb", html_dir)
    return {"notebook": src.stem, "status": "ran", "seconds": round(seconds, 1), "execution_seconds": round(seconds, 1),
            "cpu_seconds": round(cpu.seconds, 1), "where": where}


def _cached(src: Path, done_marker: Path, ex_dir: Path, html_dir: Path | None) -> dict:
    """The record of a notebook that already ran with these source and parameters (its outputs are in out_dir)."""
    cpu_s = None
    try:  # the wall time, CPU time and place of the execution whose outputs are in out_dir
        marker = json.loads(done_marker.read_text())
        ran_s, where = float(marker.get("seconds", 0.0)), str(marker.get("where", "local"))
        cpu_s = None if marker.get("cpu_seconds") is None else round(float(marker["cpu_seconds"]), 1)
    except (OSError, ValueError, AttributeError, TypeError):
        ran_s, where = 0.0, "local"
    if html_dir is not None and not (html_dir / f"{src.stem}.html").exists():
        write_html(ex_dir / f"{src.stem}.ipynb", html_dir)
    return {"notebook": src.stem, "status": "cached", "seconds": 0.0, "execution_seconds": round(ran_s, 1),
            "cpu_seconds": cpu_s, "where": where}


def run_notebook_on_worker(src: Path, build: Path, out_dir: Path, quick: bool, force: bool,
                           html_dir: Path | None) -> dict:
    """`run_notebook` as a Dask task whose experiments' cells are tasks of the same cluster. The notebook gives its
    worker thread up while it runs (`secede`), so that its cells, and those of the notebooks beside it, find free
    threads (a cluster of one-thread workers would otherwise wait forever); `reproduce` sends at most one notebook
    per worker thread at a time. The kernel's own thread pools share the worker machine's cores (`kernel_threads`)."""
    from distributed import get_worker, rejoin, secede

    worker = get_worker()
    slots = int(getattr(worker, "nthreads", 1) or 1)
    secede()
    try:
        return run_notebook(src, build, out_dir, quick, force=force, progress=False, html_dir=html_dir,
                            threads=kernel_threads(slots, slots), cells_to=str(worker.scheduler.address))
    finally:
        rejoin()


def kernel_threads(jobs: int, notebooks: int, cores: int | None = None) -> int | None:
    """Threads per kernel when `min(jobs, notebooks)` kernels share the machine's cores: the cores split
    between them, at least one; None (the libraries' own default) when a kernel runs alone."""
    side_by_side = min(jobs, notebooks)
    if side_by_side <= 1:
        return None
    return max(1, (cores or os.cpu_count() or 1) // side_by_side)


def write_html(executed: Path, html_dir: Path) -> Path | None:
    """A readable HTML page of an executed notebook (code, text, tables and figures), for a reader without
    Jupyter. A failure to render is a warning: the notebook itself ran."""
    try:
        import nbformat
        from nbconvert import HTMLExporter

        nb = nbformat.read(str(executed), as_version=4)
        body, _ = HTMLExporter().from_notebook_node(nb)
    except Exception as exc:  # nbconvert's templates or an odd output: report, do not fail the run
        print(f"spotlab: warning: no HTML for {executed.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return None
    html_dir.mkdir(parents=True, exist_ok=True)
    out = html_dir / f"{executed.stem}.html"
    out.write_text(body, encoding="utf-8")
    return out


def _merged_log(path: Path, quick: bool, seconds: float, log: list[dict]) -> dict:
    """This call's records, plus those of notebooks run by earlier calls in the same mode (`--only`, an
    interrupted run): `execution_seconds` summed over all of them is the reproduction's wall time."""
    earlier: list[dict] = []
    try:
        old = json.loads(path.read_text())
        if bool(old.get("quick")) == bool(quick):
            earlier = [r for r in old.get("notebooks", []) if isinstance(r, dict) and "notebook" in r]
    except (OSError, ValueError, AttributeError):
        pass
    now = {r["notebook"]: r for r in log}
    kept = [dict(r, status="earlier call") for r in earlier if r["notebook"] not in now]
    records = sorted(kept + log, key=lambda r: r["notebook"])
    full = sum(float(r.get("execution_seconds", r.get("seconds", 0.0))) for r in records)
    cpu = [r.get("cpu_seconds") for r in records]
    return {"quick": bool(quick), "seconds": round(seconds, 1), "execution_seconds": round(full, 1),
            "cpu_seconds": None if any(c is None for c in cpu) else round(sum(float(c) for c in cpu), 1),
            "notebooks": records}


# The longest notebooks of a full run, longest first, started first when no earlier run has recorded the times (a
# fresh clone): with two at a time, starting the long ones first keeps both cores busy to the end (longest
# processing time first). The order of the last full run's times (docs/results/last-full-run).
LONG_FIRST = ("01c_leaderboard", "11_multi_region", "10_rl_scheduling", "02_predictability", "05_commitment",
              "04_error_sensitivity", "09_cluster_scheduling")
LONG_FIRST_QUICK = ("10_rl_scheduling", "09_cluster_scheduling", "01c_leaderboard", "02_predictability")


def _longest_first(sources: list[Path], log_path: Path, quick: bool) -> list[Path]:
    """Notebooks in the order to start them: by the seconds an earlier run of the same mode recorded, longest
    first; without such a record, `LONG_FIRST` (`LONG_FIRST_QUICK` for quick runs) and then the others by name."""
    seconds: dict[str, float] = {}
    try:
        old = json.loads(log_path.read_text())
        if bool(old.get("quick")) == bool(quick):
            seconds = {r["notebook"]: float(r.get("execution_seconds", r.get("seconds", 0.0)))
                       for r in old.get("notebooks", []) if isinstance(r, dict) and "notebook" in r}
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    if seconds and all(s.stem in seconds for s in sources):
        return sorted(sources, key=lambda s: -seconds[s.stem])
    hint = LONG_FIRST_QUICK if quick else LONG_FIRST
    return sorted(sources, key=lambda s: (hint.index(s.stem) if s.stem in hint else len(hint), s.stem))


def reproduce(args: argparse.Namespace) -> int:
    """Run the notebooks `args` asks for (the options of `spotlab reproduce`); returns the exit code."""
    from tqdm import tqdm

    sources = notebook_sources(Path(args.notebooks))
    if args.only:
        sources = [s for s in sources if any(s.stem.startswith(p) for p in args.only)]
    if not sources:
        raise ExperimentError(f"no notebooks to run in {args.notebooks}"
                              + (f" whose names start with {', '.join(args.only)}" if args.only else ""))
    out_dir, build = Path(args.out), Path(args.build)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = []
    started = time.perf_counter()
    html_dir = None if args.no_html else out_dir  # next to the figures and the claims report
    scheduler = getattr(args, "scheduler", None)
    jobs = args.jobs or 1
    bar = tqdm(total=len(sources), desc="notebooks", unit="nb", file=sys.stderr,
               disable=None if args.progress is None else not args.progress)
    cell_bars = args.progress if jobs == 1 and scheduler is None else False  # one cell bar at a time on a terminal
    by_stem = {s.stem: s for s in sources}
    failed = None

    def on_done(stem: str, rec: dict | None, exc: BaseException | None) -> bool:
        """Keep a notebook's record; a failure stops the run (nothing new starts, the running ones finish)."""
        nonlocal failed
        bar.update(1)
        if exc is None:
            log.append(rec)
            return False
        if getattr(exc, "ename", None) == "KeyboardInterrupt":  # Ctrl-C reached the kernel first
            raise KeyboardInterrupt from None
        if failed is None:
            failed = (by_stem[stem], exc)
        return True

    # one queue, longest first: a core that a finishing notebook frees takes the next one (no notebook waits for
    # a group of others to finish while a core is idle)
    todo = _longest_first(sources, out_dir / "reproduce_log.json", args.quick)
    if scheduler is not None:  # each notebook a task on the cluster, longest first; absolute paths
        run_dask([Task(s.stem, run_notebook_on_worker, (s.resolve(), build.resolve(), out_dir.resolve(),
                                                        args.quick, args.force, html_dir and html_dir.resolve()))
                  for s in todo], scheduler, on_done, error=ExperimentError, name="notebook", one_per_thread=True)
    else:  # threads: each notebook runs in its own kernel process
        threads = kernel_threads(jobs, len(todo))
        one = partial(run_notebook, force=args.force, progress=cell_bars, html_dir=html_dir, threads=threads)
        run_local([Task(s.stem, one, (s, build, out_dir, args.quick)) for s in todo], on_done, jobs, threads=True)
    bar.close()
    if failed is not None:
        src, exc = failed
        print(f"spotlab: error: notebook {src.name} failed: {error_line(exc)}\n"
              f"  the partially executed copy, with the traceback, is in {build / 'executed' / (src.stem + '.ipynb')}",
              file=sys.stderr)
        return 1
    log.sort(key=lambda r: r["notebook"])
    total = time.perf_counter() - started
    merged = _merged_log(out_dir / "reproduce_log.json", args.quick, total, log)
    (out_dir / "reproduce_log.json").write_text(json.dumps(merged, indent=2))
    if scheduler is not None:
        merged["scheduler"] = scheduler
    for rec in log:
        cpu = "" if rec.get("cpu_seconds") is None else f" ({float(rec['cpu_seconds']):.0f} s of CPU)"
        print(f"{rec['notebook']:40s} {rec['status']:7s} {rec['seconds']:8.1f} s{cpu}  {rec.get('where', 'local')}")
    cpu = [float(r["cpu_seconds"]) for r in log if r.get("status") == "ran" and r.get("cpu_seconds") is not None]
    print(f"done in {total:.0f} s" + (f" ({sum(cpu):.0f} s of CPU in the notebooks run)" if cpu else "")
          + f"; figures and data in {out_dir}/"
          + ("" if html_dir is None else f", the executed notebooks as HTML in {html_dir}/"))
    try:  # the claims report must never fail a reproduction whose notebooks ran
        from .claims import write_report

        print(f"claims checked in {write_report(out_dir, args.quick)}")
    except Exception as exc:
        print(f"spotlab: warning: claims report not written: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 0
