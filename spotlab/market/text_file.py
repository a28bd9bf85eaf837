"""A trace file's text, gzip or not, with one clear error for what cannot be read: shared by every trace format."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import TraceError

if TYPE_CHECKING:
    pass


def read_trace_text(path: Path) -> str:
    """A trace file's text, gzip or not, with one clear error for what cannot be read (shared with `traces`)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, expected a trace file") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise TraceError(f"{path}: corrupt gzip file ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a UTF-8 text file") from None
