"""`spotlab claims [OUT]`: check the paper's claims against what the notebooks wrote into OUT and write the claims
report OUT/README.md (`spotlab.notebooks.claims`), without running any notebook."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import OutputError
from ..input_paths import input_folder


def register(commands: Any) -> None:
    c = commands.add_parser("claims", help="write the claims report from the notebooks' outputs (no notebook is run)",
                            description="Read the figures' data that the notebooks wrote into OUT and write the claims "
                                        "report OUT/README.md: each claim with our number beside the published one "
                                        "and whether it holds, deviates or cannot be compared.")
    c.add_argument("out", nargs="?", default="paper_figures", help="the notebooks' output folder (default paper_figures)")
    c.add_argument("--quick", action="store_true", help="the outputs are a quick run's (the report says so)")
    c.add_argument("--publish", metavar="DEST",
                   help="then copy the report, its figures and the run's log to DEST, stamped with the commit and "
                        "date (a full run only; e.g. docs/results/last-full-run, which the repository keeps)")
    c.add_argument("--commit", help="with --publish: the commit that made the run (default: the checkout's HEAD)")
    c.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..notebooks.claims import NOT_RUN, evaluate, write_report

    folder = input_folder(args.out, "the output folder of `spotlab reproduce` (run it first, or give its --out)",
                          OutputError)
    readme = folder / "README.md"
    if readme.is_file() and not readme.read_text(errors="replace").startswith(REPORT_TITLE):
        raise OutputError(f"{readme} is not a claims report; it is left as it is (give the --out folder of "
                          "`spotlab reproduce`)")
    if all(c.verdict == NOT_RUN for c in evaluate(folder)):
        raise OutputError(f"{args.out} holds none of the notebooks' outputs; give the --out folder of "
                          "`spotlab reproduce` (run it first)")
    print(write_report(args.out, args.quick))
    if args.publish:
        from ..notebooks.publish import publish

        print(publish(args.out, args.publish, commit=args.commit))
    return 0


REPORT_TITLE = "# Claims of "  # how the report `write_report` writes begins
