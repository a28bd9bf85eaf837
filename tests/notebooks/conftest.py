"""A real Dask cluster for the tests of `spotlab sweep` and `spotlab reproduce --scheduler`: a scheduler and
workers as separate processes on 127.0.0.1, each in its own process group (a kill takes its kernels)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, tmp: Path):
        self.tmp, self.procs = tmp, {}
        self.dask = str(Path(sys.executable).with_name("dask"))
        self.address = f"tcp://127.0.0.1:{free_port()}"

    def _start(self, name: str, args: list[str]) -> None:
        log = open(self.tmp / f"{name}.log", "w")
        self.procs[name] = subprocess.Popen([self.dask, *args], stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, cwd=self.tmp)  # own group: kill takes its kernels

    def start_scheduler(self) -> None:
        port = self.address.rsplit(":", 1)[1]
        self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"])

    def start_worker(self, name: str) -> None:
        self._start(name, ["worker", self.address, "--nthreads", "1", "--nworkers", "1", "--name", name,
                           "--no-dashboard", "--host", "127.0.0.1", "--death-timeout", "60"])

    def wait_for_workers(self, n: int, timeout: float = 60) -> None:
        from dask.distributed import Client

        with Client(self.address, timeout="30s") as c:
            c.wait_for_workers(n, timeout=timeout)
            deadline = time.monotonic() + timeout
            while len(c.scheduler_info()["workers"]) != n:  # a killed worker must also be gone
                assert time.monotonic() < deadline, f"cluster has not {n} workers"
                time.sleep(0.2)

    def kill(self, name: str) -> None:
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)

    def close(self) -> None:
        for name in [n for n in self.procs if n != "scheduler"] + ["scheduler"]:
            if name in self.procs:
                self.kill(name)


@pytest.fixture
def cluster(tmp_path):
    pytest.importorskip("distributed")
    c = Cluster(tmp_path)
    try:
        c.start_scheduler()
        c.start_worker("w1")
        c.start_worker("w2")
        c.wait_for_workers(2)
        yield c
    finally:
        c.close()


