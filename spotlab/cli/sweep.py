"""`spotlab sweep`: run one notebook over a grid of parameters, resumably, in local processes or on a Dask cluster
(`spotlab.notebooks.sweep`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import SweepError
from .args import output_file, output_folder, positive_int, progress_option


def register(commands: Any) -> None:
    w = commands.add_parser("sweep", help="run a notebook over a grid of parameters (resumable; local or on Dask)",
                            formatter_class=argparse.RawDescriptionHelpFormatter,
                            description="Execute a notebook (jupytext percent .py or .ipynb) with papermill once per point\n"
                                        "of a parameter grid. Each point runs in OUT/points/<hash>/ (its `out_dir`) and\n"
                                        "leaves record.json there; the same command again skips the recorded points, so an\n"
                                        "interrupted sweep resumes. All points are collected in one table.",
                            epilog="grid file (YAML): parameter -> list of values, the points are their cartesian "
                                   "product;\nan optional `fixed:` mapping gives values shared by every point:\n\n"
                                   "  alpha: [0.5, 1.0, 2.0]\n  seed: [0, 1]\n  fixed:\n    quick: true\n\n"
                                   "Every name must be defined in the notebook's `parameters` cell; `out_dir` is set by "
                                   "the sweep.\nA notebook that writes sweep_result.json (a flat JSON object) into "
                                   "out_dir adds its values\nas columns of the table. Exit code 1 if a point failed or is "
                                   "missing, 2 for bad input.")
    w.add_argument("notebook", help="jupytext percent .py (e.g. notebooks/06_policy_selection.py) or .ipynb")
    w.add_argument("--grid", required=True, help="YAML grid file (format below)")
    w.add_argument("--jobs", type=positive_int,
                   help="points run at once in local processes (default 1: notebooks often parallelise inside)")
    w.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the points on this Dask distributed scheduler (workers must share OUT's filesystem)")
    w.add_argument("--out", help="output folder (default build/sweeps/NOTEBOOK__GRID); rerun with the same one "
                                 "to resume")
    w.add_argument("--table", help="collected table (default OUT/sweep.csv; a .parquet name writes Parquet, a .csv.gz "
                                   "one gzipped CSV)")
    w.add_argument("--retry-failed", action="store_true", help="run the points recorded as failed again")
    progress_option(w)
    w.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..notebooks.sweep.run import run_sweep
    from ..notebooks.sweep.table import TABLE_SUFFIXES

    if args.jobs is not None and args.scheduler:
        raise SweepError("give either --jobs (local processes) or --scheduler (Dask), not both")
    out = args.out or str(Path("build") / "sweeps" / f"{Path(args.notebook).stem}__{Path(args.grid).stem}")
    output_folder(out, "--out")
    output_file(args.table, "--table", TABLE_SUFFIXES)
    result = run_sweep(args.notebook, args.grid, out, jobs=args.jobs or 1, scheduler=args.scheduler,
                       retry_failed=args.retry_failed, progress=args.progress, table=args.table)
    print(result.summary())
    return 0 if result.ok else 1
