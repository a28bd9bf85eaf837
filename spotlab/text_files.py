"""A data file's text, gzip or not (recognised by its magic bytes, not its name), with one clear error for what
cannot be read: shared by every reader of market traces and job traces."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from .errors import TraceError


def read_text(path: Path, kind: str = "trace file") -> str:
    """The whole text of `path`; a missing file, a folder, a damaged gzip or a non-UTF-8 file is a `TraceError`
    saying so (`kind` names what was expected)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, expected a {kind}") from None
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
