"""Who runs a task: a lease (a `claim` file: a sweep point's, a notebook's in `reproduce`) held by one attempt at a time.

While a task runs, its claim file (host, pid, attempt) is touched every `HEARTBEAT_S`
seconds. A second attempt at the same task (a rescheduled Dask task, or an overlapping run of the sweep)
waits until that claim is released or its owner is dead: a process of the same hostname that is gone, or a
claim untouched for `STALE_S` seconds (ages read on the filesystem's clock, as hosts sharing a disk may
disagree on the time). So a task is never executed twice unless its first attempt died before finishing.
Claims are taken with an exclusive create and broken with a rename, so of several waiters exactly one wins.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

CLAIM_FILE = "claim"
HEARTBEAT_S = 1.0  # how often a running task touches its claim
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
    if grave.read_text() != token:  # a live attempt claimed the task meanwhile: give its claim back
        with contextlib.suppress(FileExistsError):
            os.link(grave, claim)
    grave.unlink(missing_ok=True)


def heartbeat(claim: Path, stop: threading.Event) -> None:
    """Touch the claim every `HEARTBEAT_S` seconds until `stop` is set (run on a thread beside the task)."""
    while not stop.wait(HEARTBEAT_S):
        with contextlib.suppress(OSError):
            os.utime(claim)


@contextlib.contextmanager
def lease(claim: Path, settled: Callable[[], bool]) -> Iterator[str | None]:
    """Hold the claim `claim` for the body, heart-beating: yields this attempt's token (host:pid:id), or None
    (the claim not held) when `settled()` (the task finished in another attempt) became true meanwhile."""
    token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
    while True:
        if settled():
            yield None
            return
        if try_claim(claim, token):
            break
        break_dead_claim(claim)
        time.sleep(0.25)
    stop = threading.Event()
    beat = threading.Thread(target=heartbeat, args=(claim, stop), daemon=True)
    beat.start()
    try:
        yield None if settled() else token  # it may have finished between the last look and the claim
    finally:
        stop.set()
        beat.join()
        with contextlib.suppress(OSError):
            if claim.read_text() == token:
                claim.unlink()
