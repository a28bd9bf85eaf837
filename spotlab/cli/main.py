"""The `spotlab` command line: one parser built from one module per command group, each registering its commands
the same way (`register(commands)`, which sets the handler as `run`). Every user error ends in one line on stderr
and exit code 2; Ctrl-C ends with 130, SIGTERM with 143, after stopping every process the command started."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys

from .. import __version__
from ..errors import SpotlabError
from . import claims, cotune, data, forecast, heldout, policies, reproduce, rl, scenario, simulate, sweep
from .args import EXIT_USAGE, Parser

COMMANDS = (simulate, scenario, forecast, heldout, policies, sweep, reproduce, claims, data, cotune, rl)
DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="spotlab", description="Deadline-aware scheduling of LLM fine-tuning on spot and on-demand GPUs.")
    p.add_argument("--version", action="version", version=f"spotlab {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    commands = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in COMMANDS:
        module.register(commands)
    return p


def main(argv: list[str] | None = None) -> int:
    from ..processes import quiet_exit_stderr, stop_children, stop_on_sigterm
    from ..progress import set_default

    args = build_parser().parse_args(argv)
    stop_on_sigterm()
    set_default(getattr(args, "progress", None))  # every bar below the command follows its --progress
    try:
        return args.run(args)
    except SpotlabError as exc:
        print(f"spotlab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, and no process of ours left running
        stop_children()
        sigterm = type(exc).__name__ == "Interrupted"
        note = getattr(args, "interrupted_note", None)  # what the command keeps, e.g. reproduce's finished notebooks
        print(f"spotlab {args.command}: {'stopped by SIGTERM' if sigterm else 'interrupted'}"
              + (f"; {note}" if note else ""), file=sys.stderr)
        quiet_exit_stderr()
        return 143 if sigterm else 130
    except BrokenPipeError:  # e.g. `spotlab ... --json | head -c 100`: the reader left, nothing to report
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:
        if args.debug:
            raise
        if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
            # the machine, not spotlab: a disk that filled up or turned read-only during the run
            print(f"spotlab: error: {exc.filename or 'an output'}: cannot write ({exc.strerror})", file=sys.stderr)
            return EXIT_USAGE
        # an internal bug: still one clear line unless --debug
        print(f"spotlab: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1
