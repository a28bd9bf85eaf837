"""What every command shares: the parser (no abbreviated options, argparse's errors in spotlab's one-line shape),
the option types, the one KEY=VALUE parser, and the checks of output paths made before any work.

A value from the command line is checked as strictly as the same value in a file or in Python: the types here
refuse what cannot be a number, the library refuses what the number cannot be. KEY=VALUE pairs stay strings
here; the library converts each by the type of the parameter it sets (`spotlab.registry.coerce`), so a value
means the same whichever command passes it.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import OutputError, SpotlabError

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """No abbreviated options (`--deadline` must not silently mean `--deadline-hours`), and argparse's own
    errors in the same one-line shape as spotlab's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def finite(kind: str, positive: bool = False, nonneg: bool = False, maximum: float | None = None,
           at_most: float | None = None) -> Callable[[str], float]:
    """A finite number; `positive` (> 0) or `nonneg` (>= 0); |value| at most `maximum`; at most `at_most`."""
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{kind} must be finite, got {text!r}")
        if maximum is not None and abs(v) > maximum:
            raise argparse.ArgumentTypeError(f"{kind} must be at most {maximum:g}, got {text!r}")
        if positive and v <= 0:
            raise argparse.ArgumentTypeError(f"{kind} must be > 0, got {text!r}")
        if nonneg and v < 0:
            raise argparse.ArgumentTypeError(f"{kind} must be >= 0, got {text!r}")
        if at_most is not None and v > at_most:
            raise argparse.ArgumentTypeError(f"{kind} must be at most {at_most:g}, got {text!r}")
        return v

    return parse


def whole(kind: str, minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number, at least `minimum` and at most `maximum`."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{kind}: {text!r} is not a whole number") from None
        if minimum is not None and v < minimum:
            raise argparse.ArgumentTypeError(f"{kind} must be >= {minimum}, got {v}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"{kind} must be at most {maximum}, got {v}")
        return v

    return parse


positive_int = whole("the value", 1)
seed = whole("seed", 0)


def names(text: str) -> list[str]:
    """Comma-separated names, at least one."""
    out = [t.strip() for t in text.split(",") if t.strip()]
    if not out:
        raise argparse.ArgumentTypeError("give at least one name")
    return out


def key_value(text: str) -> tuple[str, str]:
    """KEY=VALUE as two strings (the value converted later, by the parameter it sets)."""
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def key_values(pairs: Sequence[tuple[str, str]], flag: str) -> dict[str, str]:
    """Repeated KEY=VALUE options as a dict; a key given twice is an error, not the last one silently."""
    out: dict[str, str] = {}
    for k, v in pairs:
        if k in out and out[k] != v:
            raise SpotlabError(f"{flag} {k} is given twice ({k}={out[k]} and {k}={v}); give it once")
        out[k] = v
    return out


def values_by_name(pairs: Sequence[tuple[str, str]], flag: str, names: Sequence[str], listed: str, example: str,
                   error: type[SpotlabError] = SpotlabError) -> dict[str, dict[str, str]]:
    """Repeated NAME.KEY=VALUE options (a parameter of one of several policies) as {name: {key: value}}; a name
    not among `names` (the option `listed` gives them) or a key without a name is an error."""
    out: dict[str, dict[str, str]] = {}
    for key, value in key_values(pairs, flag).items():
        name, dot, param = key.partition(".")
        if not dot or not name or not param:
            raise error(f"{flag} {key}={value}: expected POLICY.KEY=VALUE, e.g. {example}")
        if name not in names:
            raise error(f"{flag} {key}={value}: {name} is not among {listed} ({','.join(names)})")
        out.setdefault(name, {})[param] = value
    return out


def progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")


def output_file(path: str | None, flag: str, suffixes: Sequence[str] | None = None) -> None:
    """Check a file the command will write, before the long computation: not a folder, in a folder that exists
    and can be written, with one of `suffixes` when the command writes a format by its name."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise OutputError(f"{flag} {path} is a folder; give a file name, e.g. {p / 'out.csv'}")
    if suffixes is not None and not any(p.name.lower().endswith(s) for s in suffixes):
        raise OutputError(f"{flag} {path}: the file is written as {' or '.join(suffixes)}; give a name ending in it")
    if not p.parent.is_dir():
        kind = "is a file, not a folder" if p.parent.exists() else "does not exist"
        raise OutputError(f"{flag} {path}: folder {p.parent} {kind}")
    _probe(p.parent, flag, path)


def output_folder(path: str | Path | None, flag: str) -> None:
    """Check a folder the command will write into, before any work: not a file, creatable, writable."""
    if path is None:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OutputError(f"{flag} {path} is a file; give a folder")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise OutputError(f"{flag} {path}: a part of the path is a file, not a folder") from None
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot create the folder ({exc.strerror or exc})") from None
    _probe(p, flag, path)


def _probe(folder: Path, flag: str, path: str | Path) -> None:
    """Write and delete a small file: a read-only folder or a full disk is found now, not after hours of work."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".spotlab-probe-") as fh:
            fh.write(b"\0" * 4096)
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot write in {folder} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def writing(path: str | Path, flag: str) -> Iterator[None]:
    """Write an output checked before the work: a disk that filled up or went read-only since is one line
    naming the option and the file, not an internal error."""
    try:
        yield
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot write ({exc.strerror or exc})") from None


def jsonable(v: Any) -> Any:
    """`json.dumps`'s default: numpy scalars as Python numbers, anything else as its text."""
    try:
        return v.item()
    except AttributeError:
        return str(v)
