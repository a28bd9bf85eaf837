"""A trace file's text, gzip or not, with one clear error for what cannot be read: shared by every trace format."""

from __future__ import annotations

import gzip
from pathlib import Path

from ..errors import TraceError
from ..input_paths import input_file

TRACE_FILE = "a trace file (tidy CSV, sky_spot JSON or marketplace JSONL)"


def read_trace_text(path: Path, what: str = TRACE_FILE) -> str:
    """The text of a file of `what` (a trace, a windows file), gzip or not, with one clear error for what cannot
    be read."""
    input_file(path, what, TraceError)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TraceError(f"{path}: corrupt gzip file ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a UTF-8 text file") from None
