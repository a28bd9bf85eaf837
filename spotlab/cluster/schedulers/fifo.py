"""``fifo``: strict queue order; the head job starts on the first of its options that fits now, else nothing
starts (head-of-line blocking)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Scheduler

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["Fifo"]


class Fifo(Scheduler):
    """First in, first out, with head-of-line blocking (module doc)."""

    name = "fifo"

    def schedule(self, engine: Engine) -> None:
        st = engine.state  # the live state, read-only: a hot loop
        queue = st.queue
        while queue and st.total_free:
            j = queue[0]
            for oi in st.offered[j]:
                fit = engine.fits(j, oi)
                if fit is not None:
                    engine.start(j, oi, fit)
                    break
            else:
                return
