"""CHC's restart reserve (`CHC.restart_reserve`, on by default; `WindowProblem.terms(reserve_h=...)`).

- The window problem reads the value `reserve_h` later, in the window and in the tail, and checks the reserve.
- CHC's reserve is the share of a spot hour the past's restarts took, times the hours left to the soft deadline;
  none for a cost-only job, a forecast tail, or when switched off.
- Known answer: a drought, then spot that changes level every 3 h, after a past of short spells. Without the
  reserve the plan leaves no room for those restarts and finishes after the soft deadline (below uniform
  progress); with it the job is on time and earns more than either.
"""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import SolverError
from spotlab.jobs.job import Job, Throughput
from spotlab.market.episodes import Episodes
from spotlab.market.market import Market
from spotlab.optimum.window import WindowProblem
from spotlab.optimum.window_types import WindowState
from spotlab.policies.past_tail import restart_share
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate

HISTORY, SLOTS = 168, 48


def flicker_then_drought() -> Episodes:
    """A week of spells of 1-2 GPUs for 2 h every 7 h, then a window: 14 h without spot, then 2-4 GPUs whose
    level changes every 3 h."""
    past = np.zeros(HISTORY, dtype=np.int64)
    for s in range(0, HISTORY, 7):
        past[s:s + 2] = [1, 2]
    window = np.zeros(SLOTS, dtype=np.int64)
    levels = [3, 4, 2, 4, 3, 4, 2, 3]
    for k, s in enumerate(range(14, SLOTS, 3)):
        window[s:s + 3] = levels[k % len(levels)]
    a = np.concatenate([past, window])
    mk = Market(avail=a, spot_price=np.full(a.size, 1.0), od_price=np.full(a.size, 3.0), slot_hours=1.0,
                requested=4, name="flicker then drought")
    return Episodes.from_windows(mk, [HISTORY], [HISTORY + SLOTS], history=HISTORY)


def value_job(value: float = 1500.0) -> Job:
    return Job(work=100.0, deadline_h=30.0, hard_deadline_h=40.0, n_min=2, n_max=4, throughput=Throughput(1.0, -0.2),
               value=value, miss_penalty=500.0 if value else 0.0, overhead_h=0.2)


def test_the_window_problem_reads_the_value_later_by_the_reserve():
    job = Job(work=20.0, deadline_h=6.0, hard_deadline_h=12.0, n_min=1, n_max=4, value=100.0, miss_penalty=10.0)
    problem = WindowProblem(job, 4, 1.0, blocks=4)
    state = WindowState(time_h=1.0, remaining=20.0, prev_o=0, prev_s=0, pending_h=0.0)
    args = (state, np.full(4, 2.0), np.full(4, 1.0), np.full(4, 3.0))
    plain, kept = problem.terms(*args), problem.terms(*args, reserve_h=1.5)
    ends = 1.0 + np.arange(1, 5)  # the window's slots end at 2..5 h
    np.testing.assert_allclose(plain.value_end[:4], job.value_at(ends))
    np.testing.assert_allclose(kept.value_end[:4], job.value_at(ends + 1.5))
    assert kept.value_end[3] < plain.value_end[3] == 100.0  # 5 h: on time, but 6.5 h is not
    np.testing.assert_array_equal(kept.od_cost, plain.od_cost)  # only the value moves
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(SolverError, match="reserve"):
            problem.terms(*args, reserve_h=bad)


def reserves(params: dict, job: Job, monkeypatch) -> list[float]:
    """The reserve CHC passes to each window solve."""
    seen: list[float] = []
    solve_many = WindowProblem.solve_many

    def spy(self, problems, **k):
        seen.extend(p.get("reserve_h", 0.0) for p in problems)
        return solve_many(self, problems, **k)

    monkeypatch.setattr(WindowProblem, "solve_many", spy)
    simulate(make_policy("chc", {"w": 12, **params}), flicker_then_drought(), job)
    monkeypatch.undo()
    return seen


def test_the_reserve_is_the_past_restart_share_of_the_hours_to_the_deadline(monkeypatch):
    ep = flicker_then_drought()
    seen_at = np.concatenate([ep.history_avail[0], ep.avail[0]])  # at slot t: the week up to slot t included

    def lost(t: int) -> float:
        return 1.0 - restart_share(np.minimum(seen_at[t + 1:HISTORY + t + 1], 4), 1.0, 0.2)

    assert 0.05 < lost(0) < 0.5  # the past's spells are short: restarts take a real share of them
    seen = reserves({"predictor": "persistence"}, value_job(), monkeypatch)
    assert seen[0] == pytest.approx(lost(0) * 30.0)  # the first slot: 30 h to the soft deadline
    assert seen[1] == pytest.approx(lost(1) * 29.0)
    assert all(r >= 0 for r in seen)
    # none for a cost-only job, switched off, or with a tail that is a forecast of its own slots
    assert not any(reserves({"predictor": "persistence"}, value_job(0.0), monkeypatch))
    assert not any(reserves({"predictor": "persistence", "restart_reserve": False}, value_job(), monkeypatch))
    assert make_policy("chc").unwrapped.restart_reserve is True  # on by default
    assert not any(reserves({"predictor": "oracle"}, value_job(), monkeypatch))


def test_the_reserve_keeps_room_for_restarts_it_cannot_forecast():
    ep, job = flicker_then_drought(), value_job()
    runs = {r: simulate(make_policy("chc", {"w": 12, "predictor": "persistence", "restart_reserve": r},
                                    give_up=True), ep, job) for r in (False, True)}
    up = simulate(make_policy("uniform_progress", give_up=True), ep, job)
    assert runs[False].completion_h[0] > job.deadline_h  # late: N_max to the end, and restarts on top
    assert runs[False].utility[0] < up.utility[0]
    assert runs[True].completion_h[0] <= job.deadline_h
    assert runs[True].utility[0] > max(runs[False].utility[0], up.utility[0])
