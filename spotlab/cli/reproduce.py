"""`spotlab reproduce`: execute every notebook with papermill and write the figures, the data behind them and the
claims report (`spotlab.notebooks.reproduce`); what `make reproduce` runs. Resumable: a notebook that ran with the
same source and parameters is not run again. Local kernels (`--jobs`) or a Dask cluster (`--scheduler`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ExperimentError
from ..input_paths import input_folder
from .args import output_folder, positive_int


def register(commands: Any) -> None:
    from ..notebooks.execute import ROOT

    r = commands.add_parser("reproduce", help="execute every notebook and write paper_figures/ and the claims report",
                            description="Execute every notebook of NOTEBOOKS (jupytext .py files) with papermill into "
                                        "BUILD/executed, never in place, writing figures and data to OUT and the claims "
                                        "report OUT/README.md. A notebook that already ran with the same source and "
                                        "parameters is skipped, so an interrupted run resumes. With --scheduler each notebook is a task "
                                        "on a Dask distributed cluster (as the points of `spotlab sweep` are).")
    r.add_argument("--notebooks", default=str(ROOT / "notebooks"), help="folder of the notebooks (default notebooks/)")
    r.add_argument("--out", default=str(ROOT / "paper_figures"), help="figures, data and report (default paper_figures/)")
    r.add_argument("--build", default=str(ROOT / "build"), help="converted and executed notebooks (default build/)")
    r.add_argument("--quick", action="store_true", help="quick parameters: a first look in a few minutes")
    r.add_argument("--only", nargs="*", help="notebook name prefixes to run (default: all)")
    r.add_argument("--force", action="store_true", help="re-run notebooks that already ran")
    r.add_argument("--no-html", action="store_true", help="do not write an HTML page of each executed notebook")
    r.add_argument("--jobs", type=positive_int,
                   help="notebooks executed at once, each in its own kernel (default 1; 2 on 2 cores shortens "
                        "--quick, where kernel start-up and plotting leave cores idle)")
    r.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run each notebook as a task on this Dask distributed scheduler (as `spotlab sweep` does); "
                        "the workers must see NOTEBOOKS, OUT and BUILD at the same paths")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bars on stderr (default: when stderr is a terminal)")
    r.set_defaults(run=run, interrupted_note="finished notebooks are kept, run it again to resume")


def run(args: argparse.Namespace) -> int:
    from ..notebooks.reproduce import reproduce

    if args.jobs is not None and args.scheduler:
        raise ExperimentError("give either --jobs (local kernels) or --scheduler (Dask), not both")
    input_folder(args.notebooks, "a folder of notebooks (jupytext .py files)", ExperimentError)
    output_folder(args.out, "--out")
    output_folder(args.build, "--build")
    return reproduce(args)
