"""Progress of long runs: a bar on stderr when it is a terminal (or when asked), stages and elapsed time, nothing
otherwise; one class so that every command shows progress the same way."""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Iterator


class _NoBar:
    """What `Progress` drives when no bar is shown."""

    disable = True
    n = 0

    def update(self, n: float = 1) -> None:
        self.n += n

    def reset(self, total: float | None = None) -> None:
        self.n = 0

    def refresh(self) -> None:
        pass

    def set_description_str(self, text: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """A tqdm bar on stderr whose elapsed time keeps moving even while one long step runs (a solver, a
    model fit): a user sees that the command works and for how long, and the step it is in.

    `enabled=None` shows it when stderr is a terminal (tqdm's rule); `stage(text)` names the current step.
    """

    def __init__(self, total: float | None = None, desc: str = "", unit: str = "it",
                 enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = sys.stderr.isatty()
        if enabled:
            from tqdm import (
                tqdm,  # the terminal bar: tqdm.auto's notebook detection costs 50 ms of start-up
            )

            self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)
        else:
            self.bar = _NoBar()  # not even tqdm's import (40 ms) when nothing is shown
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        if not self.bar.disable:
            self._beat = threading.Thread(target=self._refresh, daemon=True)
            self._beat.start()

    def _refresh(self) -> None:
        while not self._stop.wait(1.0):
            with contextlib.suppress(Exception):
                self.bar.refresh()

    def stage(self, text: str) -> None:
        self.bar.set_description_str(text, refresh=True)

    def update(self, n: float = 1) -> None:
        self.bar.update(n)

    def set(self, n: float) -> None:
        """Move the bar to `n` (never backwards)."""
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=2.0)
        self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextlib.contextmanager
def progress(total: float | None = None, desc: str = "", unit: str = "it",
             enabled: bool | None = None) -> Iterator[Progress]:
    bar = Progress(total, desc, unit, enabled)
    try:
        yield bar
    finally:
        bar.close()
