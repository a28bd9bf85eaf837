"""The event loop of the cluster engine: arrivals, ends and failures; scheduling and placement are pluggable stages.

A run goes through four stages: **accept** (`admission`: options that can never fit are skipped, jobs left without
any are rejected), **schedule** (a `Scheduler`, called after each batch of same-time events, decides which queued
jobs start with which option), **place** (a `Placement` says where a (job, option) would go; the scheduler asks
through `Engine.fits`), **run** (this module: a started attempt holds its GPUs until it ends). Non-preemptive.

- **runs**: a failing option (out of memory, invalid configuration) holds its GPUs for ``fail_after_s``, then the
  job is re-queued at the tail with that option removed; once its options are exhausted the job is *failed*.
  With `SimJob.primary = k > 0` only the first k options are offered until all of them have failed, then the
  rest (fallbacks, e.g. trial and error after wrong predictions).
  A successful run holds its GPUs for ``setup_s + work / true_rate``; the setup part (profiling) is wasted.

`Engine` is a run one step at a time, for whoever makes the decisions (a scheduler, or a learning agent picking the
next job): `advance` processes the next batch of same-time events and says whether there was one; between two
calls, `fits` and `start` start jobs at the current time. Layers: the engine takes a built `Placement` and knows no
names; `spotlab.cluster.simulate.simulate`, one layer up, builds schedulers and placements by name and runs it whole.

The simulator does not know where a job's options come from: a configuration source (rules, a predictor, a
recommender, an oracle) turns each job into a `SimJob` whose `Option`s carry both what the scheduler *believes*
(``est_rate``) and what actually *happens* (``true_rate``, ``fails``).
"""

from __future__ import annotations

import heapq
import math
from itertools import islice
from typing import Any, Iterable, Sequence

from ..errors import ClusterError
from .admission import admit, check_jobs
from .placement.base import Placement
from .placement.best_fit import BestFit
from .result import ClusterResult, build_result
from .state import Attempt, Cluster, ClusterState, Fit, SimJob, is_int, is_real

__all__ = ["Engine"]

_UNKNOWN = object()  # not in the cache of placements


class Engine:
    """One run of ``jobs`` on ``cluster``, advanced event batch by event batch (module doc).

    Jobs are indices into `jobs` (input order), options indices into a job's options, pools indices into the
    cluster's pools. The live state (`state`) is read-only outside the engine: change it through `start`.
    ``placement``: a built `Placement` (`spotlab.cluster.registry.make_placement` builds one by name); None is
    best fit.
    """

    def __init__(self, cluster: Cluster, jobs: Iterable[SimJob], placement: Placement | None = None,
                 fail_after_s: float = 120.0) -> None:
        if not is_real(fail_after_s) or not math.isfinite(fail_after_s) or fail_after_s <= 0:
            raise ClusterError(f"fail_after_s must be a finite number > 0, got {fail_after_s!r}")
        if not isinstance(cluster, Cluster):
            raise ClusterError(f"cluster must be a Cluster (e.g. Cluster.parse('A100-80GB:4x8')), got {cluster!r}")
        jobs = tuple(jobs)
        check_jobs(jobs)
        self.cluster, self.jobs, self.fail_after_s = cluster, jobs, float(fail_after_s)
        if placement is None:
            placement = BestFit()
        elif not isinstance(placement, Placement):
            raise ClusterError(f"placement must be a Placement (make_placement({placement!r}) builds one by name), "
                               f"got {placement!r}")
        self.placement = placement
        self.admission = admit(cluster, jobs)
        self.state = ClusterState(cluster, jobs, self.admission.places)
        self._attempts: list[Attempt] = []
        self._ended = [-1] * len(jobs)  # index of the attempt that ended each job (-1: rejected or not yet)
        self._n_ended = sum(1 for p in self.admission.places if not p)  # rejected jobs end before the run
        arrivals = sorted((j for j in range(len(jobs)) if self.admission.places[j]), key=lambda j: jobs[j].arrival_s)
        self._events = [(float(jobs[j].arrival_s), seq, j, -1) for seq, j in enumerate(arrivals)]
        heapq.heapify(self._events)  # (time, seq, job, attempt or -1 for an arrival)
        self._seq = len(self._events)
        self._fits: dict[tuple[str, int], Fit | None] = {}  # per (GPU type, GPUs), until the state changes
        self._free_gpus_only = bool(self.placement.free_gpus_only)

    # -------------------------------------------------------------------------------------- read-only view

    @property
    def now(self) -> float:
        """The clock: the time of the last batch of events processed."""
        return self.state.now

    @property
    def queue_length(self) -> int:
        """Jobs waiting in the queue."""
        return len(self.state.queue)

    def queued(self, limit: int | None = None) -> tuple[int, ...]:
        """The queued jobs, head first (the first ``limit`` of them)."""
        q = self.state.queue
        return tuple(q) if limit is None else tuple(islice(q, limit))

    def head(self) -> int:
        """The job at the head of the queue (the queue must not be empty)."""
        return self.state.queue[0]

    def options(self, job: int) -> tuple[int, ...]:
        """The options ``job`` is offered now (indices into its options, the source's order)."""
        return tuple(self.state.offered[job])

    @property
    def free_gpus(self) -> int:
        """Free GPUs over the whole cluster."""
        return self.state.total_free

    def free(self, pool: int) -> tuple[int, ...]:
        """Free GPUs per node of ``pool``."""
        return tuple(self.state.pools[pool].free)

    def running(self) -> tuple[Attempt, ...]:
        """The attempts running now (each with its pool, allocation, start and end)."""
        return tuple(self.state.running.values())

    @property
    def ended(self) -> int:
        """Jobs that have ended (done, failed or rejected)."""
        return self._n_ended

    @property
    def done(self) -> bool:
        """No event left to process."""
        return not self._events

    # ---------------------------------------------------------------------------------------- decisions

    def fits(self, job: int, option: int) -> Fit | None:
        """Where ``job``'s ``option`` would go now (the first of its GPU type's pools where the placement finds
        room, cluster order), or None."""
        try:
            o = self.jobs[job].options[option]
            if job < 0 or option < 0:
                raise IndexError
        except (IndexError, TypeError):
            raise ClusterError(f"no option {option!r} of job index {job!r} ({len(self.jobs)} jobs; jobs and options "
                               "are indices)") from None
        key = (o.gpu, o.gpus)  # the placement does not see the job: options asking the same share its answer
        hit = self._fits.get(key, _UNKNOWN)
        if hit is not _UNKNOWN:
            return hit
        hit, place, state = None, self.placement.place, self.state
        for pi in self.admission.places[job].get(option, ()):
            alloc = place(state, pi, o.gpus)
            if alloc is not None:
                hit = (pi, tuple(alloc))
                break
        self._fits[key] = hit
        return hit

    def start(self, job: int, option: int, fit: Fit | tuple[int, Sequence[tuple[int, int]]]) -> None:
        """Start queued ``job`` now on ``option`` at ``fit`` (a pool and an allocation in it, e.g. from `fits`)."""
        st, jobs = self.state, self.jobs
        if type(job) is not int and not is_int(job) or not 0 <= job < len(jobs):
            raise ClusterError(f"job index {job!r} out of range (0..{len(jobs) - 1})")
        jb = jobs[job]
        if option not in st.offered[job]:
            raise ClusterError(f"job {jb.job_id}: option {option!r} is not offered now "
                               f"(offered: {', '.join(map(str, st.offered[job])) or 'none'})")
        o = jb.options[option]
        if fit is not None and self._fits.get((o.gpu, o.gpus), _UNKNOWN) is fit:
            pool, alloc = fit  # what `fits` answered for this GPU type and count in this very state
            st.move(pool, alloc, -1)
        else:
            pool, alloc = self._checked(jb, o.gpu, o.gpus, fit)
            st.take(pool, alloc)
        queue = st.queue
        if queue and queue[0] == job:
            queue.popleft()
        else:
            try:
                queue.remove(job)
            except ValueError:
                st.give(pool, alloc)
                raise ClusterError(f"job {jb.job_id} is not queued (running, ended or not yet arrived)") from None
        now = st.now
        end = now + (self.fail_after_s if o.fails else jb.setup_s + jb.work / o.true_rate)
        at = Attempt(job, option, pool, alloc, now, end, bool(o.fails))
        self._attempts.append(at)
        st.running[job] = at
        heapq.heappush(self._events, (end, self._seq, job, len(self._attempts) - 1))
        self._seq += 1
        self._fits.clear()

    def _checked(self, jb: SimJob, gpu: str, gpus: int, fit: Any) -> tuple[int, tuple[tuple[int, int], ...]]:
        """``fit`` as (pool, allocation) if it is one for ``gpus`` GPUs of type ``gpu``, else a clear error."""
        try:
            pool, alloc = fit
            alloc = tuple((node, n) for node, n in alloc)
        except (TypeError, ValueError):
            raise ClusterError(f"job {jb.job_id}: expected (pool, ((node, gpus), ...)), got {fit!r}") from None
        pools = self.cluster.pools
        if not is_int(pool) or not 0 <= pool < len(pools) or pools[pool].gpu != gpu:
            raise ClusterError(f"job {jb.job_id}: pool {pool!r} is not a {gpu} pool of {self.cluster}")
        if sum(n for _, n in alloc) != gpus:
            raise ClusterError(f"job {jb.job_id}: allocation {alloc!r} does not hold the option's {gpus} GPUs")
        return pool, alloc

    # ----------------------------------------------------------------------------------------- the clock

    def advance(self) -> bool:
        """Process the next batch of same-time events (arrivals join the queue's tail; an ended attempt frees its
        GPUs, and a failed one re-queues its job with that option removed); False when there is none left."""
        events = self._events
        if not events:
            return False
        st = self.state
        now = st.now = events[0][0]
        queue = st.queue
        if not self._free_gpus_only:
            self._fits.clear()  # the placement reads the queue or the clock: ask it again
        while events and events[0][0] == now:
            _, _, j, ai = heapq.heappop(events)
            if ai < 0:
                queue.append(j)
                continue
            at = self._attempts[ai]
            del st.running[j]
            st.move(at.pool, at.alloc, +1)
            self._fits.clear()
            offered = st.offered[j]
            if at.fails:
                offered.remove(at.option)
                if not offered and st.fallback[j]:
                    offered = st.offered[j] = st.fallback[j]
                    st.fallback[j] = []
            if at.fails and offered:
                queue.append(j)
            else:
                self._ended[j] = ai
                self._n_ended += 1
        return True

    def log(self) -> tuple[Sequence[Attempt], Sequence[int]]:
        """Once every job has ended: every attempt (start order) and, per job, the index of the attempt that
        ended it (-1: rejected), what `result` builds its tables from (read-only)."""
        self._check_ended()
        return self._attempts, self._ended

    def result(self, policy: str = "manual") -> ClusterResult:
        """The run's tables once every job has ended; ``policy`` names whoever made the decisions."""
        self._check_ended()
        return build_result(self.cluster, self.jobs, policy, self._attempts, self._ended, self.admission.reasons,
                            self.admission.places, self.admission.skipped)

    def _check_ended(self) -> None:
        if self._n_ended < len(self.jobs):
            left = len(self.jobs) - self._n_ended
            raise ClusterError(f"the run has not ended: {left} job(s) queued or running ({len(self.state.queue)} "
                               f"queued, {len(self.state.running)} running, {len(self._events)} event(s) left)")
