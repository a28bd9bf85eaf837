"""Publish a full reproduction: copy its claims report, the figures the report shows and the run's log from the
output folder (which every `make reproduce`, quick or not, rewrites) to a committed folder, stamped with the commit
and date that made them, so that a reader sees the results without running two hours of notebooks."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from ..errors import OutputError

KEPT = ("README.md", "reproduce_log.json")


def publish(out_dir: str | Path, dest: str | Path, commit: str | None = None, date: str | None = None) -> Path:
    """Copy the full run in `out_dir` to `dest` (replacing what was there). `commit` and `date` say what made
    the run (default: the checkout's HEAD and the log's file time); a quick run is refused."""
    out, dest = Path(out_dir), Path(dest)
    log_path, report = out / "reproduce_log.json", out / "README.md"
    if not report.is_file() or not log_path.is_file():
        raise OutputError(f"{out}: no claims report and run log to publish (run `spotlab reproduce` first)")
    log = json.loads(log_path.read_text())
    if log.get("quick"):
        raise OutputError(f"{out}: a quick run is a first look, not the reproduction; publish a full run")
    text = report.read_text()
    figures = sorted(set(re.findall(r"\]\(([\w.-]+\.png)\)", text)))
    commit = commit or _head(out)
    date = date or datetime.fromtimestamp(log_path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    stamp = (f"*Made by `make reproduce` (full run) at commit `{commit}` on {date}; published with "
             f"`spotlab claims {_in_checkout(out)} --publish {dest}`.*")
    lines = text.split("\n")
    (dest / "README.md").write_text("\n".join(lines[:1] + ["", stamp] + lines[1:]))
    shutil.copy2(log_path, dest / "reproduce_log.json")
    for name in figures:
        if (out / name).is_file():
            shutil.copy2(out / name, dest / name)
    return dest


def _git(folder: Path, *args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _head(folder: Path) -> str:
    return _git(folder, "rev-parse", "--short", "HEAD") or "unknown"


def _in_checkout(folder: Path) -> Path:
    """The output folder as the checkout that made the run names it (`paper_figures`), not the path of wherever
    that checkout was; the path as given outside a checkout."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    try:
        return folder.resolve().relative_to(Path(top).resolve()) if top else folder
    except ValueError:
        return folder
