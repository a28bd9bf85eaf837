"""The sweep's progress bar, in points with fractions: a running point counts the cells its notebook has done.

Points of a sweep often take minutes each; a bar that only counts finished points sits at 0% for that
long. This one reads the executed copy papermill saves after each cell.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any


class CellProgress:
    """The sweep's bar in points, fractions included: a running point counts the share of its notebook's cells
    papermill has finished (read from the executed copy it saves after each cell), so the bar moves while the
    first points run instead of sitting at 0% for minutes. Reads happen on a background thread, once a second,
    and only for files that changed."""

    def __init__(self, bar, out: Path, stem: str, keys: list[str]) -> None:
        self.bar, self.out, self.stem, self.keys = bar, out, stem, keys
        self.finished: set[str] = set()
        self.partial: dict[str, tuple[float, float]] = {}  # key -> (mtime seen, fraction done)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        if not bar.disable:
            self.thread.start()

    def _fraction(self, key: str) -> float:
        path = self.out / "points" / key / f"{self.stem}.ipynb"
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return 0.0
        seen = self.partial.get(key)
        if seen and seen[0] == mtime:
            return seen[1]
        try:
            cells = [c for c in json.loads(path.read_text()).get("cells", []) if c.get("cell_type") == "code"]
        except (OSError, ValueError, AttributeError):
            return seen[1] if seen else 0.0
        done = sum(1 for c in cells if c.get("metadata", {}).get("papermill", {}).get("status") == "completed")
        frac = min(done / len(cells), 0.99) if cells else 0.0
        self.partial[key] = (mtime, frac)
        return frac

    def _show(self) -> None:
        with self.lock:
            value = len(self.finished) + sum(self._fraction(k) for k in self.keys if k not in self.finished)
            self.bar.n = round(min(value, len(self.keys)), 2)
            self.bar.refresh()

    def _poll(self) -> None:
        while not self.stop.wait(1.0):
            with contextlib.suppress(Exception):
                self._show()

    def done(self, key: str) -> None:
        with self.lock:
            self.finished.add(key)
        self._show()

    def update(self, n: int = 1) -> None:  # what the runners call after each point: `done` already counted it
        self._show()

    def write(self, text: str) -> None:
        self.bar.write(text)

    def set_postfix(self, **kw: Any) -> None:
        self.bar.set_postfix(**kw)

    def close(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=2.0)
