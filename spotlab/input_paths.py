"""Paths a command reads, checked with one message shape: a folder given where a file is expected (or a file
where a folder is), or nothing there, says what was expected, never a bare "not found"."""

from __future__ import annotations

from pathlib import Path

from .errors import SpotlabError


def input_file(path: str | Path, what: str, error: type[SpotlabError] = SpotlabError) -> Path:
    """`path` as a `Path` if it is a file; else `error` naming `what` it should be (e.g. "a trace file")."""
    p = Path(path)
    if p.is_dir():
        raise error(f"{path} is a folder; expected {what}")
    if not p.exists():
        raise error(f"{path}: no such file; expected {what}")
    return p


def input_folder(path: str | Path, what: str, error: type[SpotlabError] = SpotlabError) -> Path:
    """`path` as a `Path` if it is a folder; else `error` naming `what` it should be."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise error(f"{path} is a file; expected {what}")
    if not p.is_dir():
        raise error(f"{path}: no such folder; expected {what}")
    return p
