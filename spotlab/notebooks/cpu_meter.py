"""The CPU time a notebook's execution used: its kernel and every process the kernel started (joblib's workers).

Wall time alone cannot say where a reproduction's work is: notebooks share the cores with each other, so a
notebook's wall time grows with what runs beside it. CPU seconds do not, and their sum against the cores times
the wall time says whether a run is bound by its work or waits on something.

The kernel's process tree is sampled on a thread (psutil) every `interval` seconds while the notebook runs, and
each process's user + system time is kept as last seen: a process that ends between two samples loses at most
that interval's CPU, and one that lives less than an interval is not seen at all.
"""

from __future__ import annotations

import threading
from types import TracebackType


class ProcessTreeCPU:
    """CPU seconds (user + system) of a process and its descendants, sampled until the block ends; the process is
    named once it exists (`watch`). Use as a context manager; `seconds` is the total seen."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = float(interval)
        self._root: int | None = None
        self._seen: dict[tuple[int, float], float] = {}  # (pid, start time): CPU seconds last seen
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="spotlab-cpu-meter", daemon=True)

    def watch(self, pid: int) -> None:
        """Measure the tree under `pid` (the kernel, once launched)."""
        self._root = int(pid)
        self.sample()

    def sample(self) -> None:
        """Read the CPU time of every process now in the tree."""
        import psutil

        if self._root is None:
            return
        try:
            root = psutil.Process(self._root)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:  # the kernel has ended: what was seen stays
            return
        for proc in procs:
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    key = (proc.pid, proc.create_time())
            except psutil.Error:
                continue
            with self._lock:
                self._seen[key] = max(self._seen.get(key, 0.0), float(times.user + times.system))

    @property
    def seconds(self) -> float:
        with self._lock:
            return float(sum(self._seen.values()))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ProcessTreeCPU:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
