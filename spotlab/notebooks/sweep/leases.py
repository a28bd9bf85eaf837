"""Who runs a point: a lease (the `claim` file in the point's folder) held by one attempt at a time.

While a point runs, its folder holds a `claim` file (host, pid, attempt) touched every `HEARTBEAT_S`
seconds. A second attempt at the same point (a rescheduled Dask task, or an overlapping run of the sweep)
waits until that claim is released or its owner is dead: a process of the same hostname that is gone, or a
claim untouched for `STALE_S` seconds (ages read on the filesystem's clock, as hosts sharing a disk may
disagree on the time). So a point is never executed twice unless its first attempt died before finishing.
Claims are taken with an exclusive create and broken with a rename, so of several waiters exactly one wins.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from pathlib import Path

CLAIM_FILE = "claim"
HEARTBEAT_S = 1.0  # how often a running point touches its claim
STALE_S = 10.0  # a claim untouched this long belongs to a dead attempt


def _fs_now(folder: Path) -> float:
    """The filesystem's clock, so claim ages compare like with like on a shared disk with skewed hosts."""
    probe = folder / f".now.{uuid.uuid4().hex}"
    probe.touch()
    try:
        return probe.stat().st_mtime
    finally:
        probe.unlink(missing_ok=True)


def try_claim(claim: Path, token: str) -> bool:
    """Take the claim for the attempt `token` (host:pid:id) if nobody holds it; False when somebody does."""
    try:
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        f.write(token)
    return True


def holder_gone(token: str) -> bool:
    """True when the claim was taken by a process of this host that no longer runs (no need to wait)."""
    host, _, rest = token.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host (or a claim still being written): only its age tells
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self/stat").exists():
        try:
            return stat.read_text().rpartition(")")[2].split()[0] == "Z"  # a zombie runs nothing
        except (FileNotFoundError, ProcessLookupError):
            return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def break_dead_claim(claim: Path) -> None:
    """Remove the claim of an attempt that died (its process is gone, or it stopped heart-beating)."""
    try:
        token = claim.read_text()
        age = _fs_now(claim.parent) - claim.stat().st_mtime
    except FileNotFoundError:
        return
    if age <= STALE_S and not holder_gone(token):
        return
    grave = claim.with_name(f".{CLAIM_FILE}.dead.{uuid.uuid4().hex}")
    try:
        os.rename(claim, grave)  # of several waiters, one wins
    except FileNotFoundError:
        return
    if grave.read_text() != token:  # a live attempt claimed the point meanwhile: give its claim back
        with contextlib.suppress(FileExistsError):
            os.link(grave, claim)
    grave.unlink(missing_ok=True)


def heartbeat(claim: Path, stop: threading.Event) -> None:
    """Touch the claim every `HEARTBEAT_S` seconds until `stop` is set (run on a thread beside the point)."""
    while not stop.wait(HEARTBEAT_S):
        with contextlib.suppress(OSError):
            os.utime(claim)
