"""A data file's text, gzip or not (recognised by its magic bytes, not its name), with one clear error for what
cannot be read: shared by every reader of market traces, windows files and job traces."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from .errors import TraceError
from .input_paths import input_file

TRACE_FILE = "a trace file (tidy CSV, sky_spot JSON or marketplace JSONL)"


def read_text(path: str | Path, what: str = TRACE_FILE) -> str:
    """The whole text of `path`; a missing file, a folder, a damaged gzip or a non-UTF-8 file is a `TraceError`
    saying so (`what` names what was expected, e.g. "a windows file (CSV: ...)")."""
    path = input_file(path, what, TraceError)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{path}: damaged gzip file ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a UTF-8 text file") from None
