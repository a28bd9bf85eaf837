"""A3 policy selection as a policy, and the online policies from the command line (issue: CLI contract)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError
from spotlab.experiments.setups import JobSpec
from spotlab.market.synthetic import Regime, synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate


def run(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "spotlab", *map(str, args)], capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def setup():
    market = synthetic_market(24 * 12, slot_hours=1.0, requested=4, od_price=3.0, regime="volatile", seed=11)
    job = JobSpec(deadline_h=8, n_max=4, load=0.5).job(market)
    episodes = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=2, history_hours=24, max_jobs=60)
    return market, job, episodes


def test_select_plays_the_chosen_member_and_reports_regret(setup):
    _, job, episodes = setup
    policy = make_policy("select", {"pool": "quick"})
    res = simulate(policy, episodes, job, seed=3)
    run_ = policy.run_
    U = run_.member_utilities
    assert U.shape == (episodes.n, 5)
    # replaying the chosen member reproduces its run exactly
    np.testing.assert_allclose(res.utility, U[np.arange(episodes.n), run_.chosen], rtol=1e-9, atol=1e-9)
    rep = res.policy_report
    assert rep["rounds"] == episodes.n and rep["seed"] == run_.seed
    best_total = U.sum(axis=0).max()
    assert rep["regret"] == pytest.approx(best_total - run_.utility_expected.sum())
    assert np.isfinite(rep["regret_slope"])
    # the same seed gives the same choices
    again = make_policy("select", {"pool": "quick"})
    simulate(again, episodes, job, seed=3)
    np.testing.assert_array_equal(again.run_.chosen, run_.chosen)


def test_overlapping_rounds_get_delayed_feedback(setup):
    from spotlab.policies.select import known_from

    _, job, episodes = setup  # a job every 2 h, each window 10 h long
    known = known_from(episodes, 10)
    assert known[0] == 5 and np.all(known >= np.arange(1, episodes.n + 1))
    assert np.all(episodes.starts[np.minimum(known, episodes.n - 1)][known < episodes.n]
                  >= (episodes.starts + 10)[known < episodes.n])


def test_a_round_is_learnt_from_once_every_member_has_finished_it(setup):
    """A round's outcome reaches the selector at the first round that starts after every member's job on it
    has ended (not before: no look-ahead; not only at the window's end: early jobs teach early)."""
    from spotlab.policies.select import known_from, member_label

    _, job, episodes = setup
    policy = make_policy("select", {"pool": "quick"})
    simulate(policy, episodes, job, seed=3)
    sel = policy.unwrapped
    ends = []
    for k, (name, params) in enumerate(sel.members()):
        res = simulate(make_policy(name, params), episodes, job, seed=3)
        np.testing.assert_allclose(res.utility, sel.run_.member_utilities[:, k], rtol=1e-9, atol=1e-9,
                                   err_msg=member_label(name, params))
        # the slot a member's job ended in: its last slot alive; the window's end for a job given up
        ends.append(np.where(res.arrays["gave_up"], 10, res.arrays["alive"].sum(axis=1)))
    span = np.max(ends, axis=0)
    known = known_from(episodes, 10, sel.settled_)
    starts = episodes.starts
    for i in range(episodes.n):
        if known[i] < episodes.n:
            assert starts[known[i]] >= starts[i] + span[i]  # nothing is used before it is known
        if known[i] - 1 > i:
            assert starts[known[i] - 1] < starts[i] + span[i]  # ... and it is used as soon as it is
    window = known_from(episodes, 10)
    assert np.all(known <= window) and np.any(known < window)


def test_exp3_and_custom_pool(setup):
    _, job, episodes = setup
    pool = [("prediction_free", {"theta": 0.5}), ("uniform_progress", {}), ("greedy", {})]
    policy = make_policy("select", {"pool": pool, "algorithm": "exp3"})
    res = simulate(policy, episodes, job)
    assert res.policy_report["algorithm"] == "exp3"
    assert len(res.policy_report["members"]) == 3


def test_select_warms_up_on_the_past(setup):
    """With a history before the first job, A3 first replays the pool on jobs that ended before it (same
    length, same stride) and starts from what they teach; without it, from uniform weights."""
    from spotlab.policies.select import warmup_episodes

    _, job, episodes = setup
    warm = warmup_episodes(episodes, 10)
    assert warm is not None and warm.n == 8  # 24 h of history, 10-h windows every 2 h
    ends = warm.starts + warm.length
    assert ends[-1] == 24 and np.all(np.diff(warm.starts) == 2)
    # the warm-up windows are the 24 h before the first job, slot for slot
    np.testing.assert_array_equal(warm.avail[-1], episodes.history_avail[0, -10:])
    on = make_policy("select", {"pool": "quick", "prefer": None})
    off = make_policy("select", {"pool": "quick", "warmup": False, "prefer": None})
    simulate(on, episodes, job)
    simulate(off, episodes, job)
    assert on.report()["warmup_rounds"] == 8 and off.report()["warmup_rounds"] == 0
    np.testing.assert_allclose(off.run_.probabilities[0], 0.2)
    assert not np.allclose(on.run_.probabilities[0], 0.2)
    np.testing.assert_array_equal(on.run_.member_utilities, off.run_.member_utilities)
    # blind, the default plays the pool's CHC member rather than a uniform draw
    auto = make_policy("select", {"pool": "quick", "warmup": False})
    simulate(auto, episodes, job)
    np.testing.assert_allclose(auto.run_.probabilities[0], [1, 0, 0, 0, 0])
    no_history = cut_windows(setup[0], horizon_hours=job.hard_deadline_h, stride_hours=2, history_hours=0, max_jobs=10)
    assert warmup_episodes(no_history, 10) is None


@pytest.mark.parametrize("params, msg", [
    ({"warmup": "maybe"}, "warmup='maybe' is not a valid bool"),
    ({"pool": "nope"}, "unknown pool 'nope'"),
    ({"pool": [("optimal", {})]}, "'optimal' cannot be a pool member"),
    ({"pool": []}, "the pool is empty"),
    ({"pool": "quick", "prefer": "greedy"}, r"prefer='greedy' is not in the pool; name a member \(chc\(w=4"),
    ({"algorithm": "ucb"}, r"algorithm must be one of 'flipflop', 'adahedge', 'hedge', 'exp3' \(got 'ucb'\)"),
])
def test_bad_select_parameters(setup, params, msg):
    _, job, episodes = setup
    with pytest.raises(PolicyError, match=msg):
        simulate(make_policy("select", params), episodes, job)


def test_cli_runs_the_online_policies(dataset, tmp_path):
    trace = dataset("markets/gcp_h100_probes.csv.gz")
    base = ["simulate", "--trace", trace, "--zone", "us-central1-a", "--slot-hours", 1, "--work-hours", 24,
            "--deadline-hours", 8, "--hard-deadline-hours", 10, "--gpus-min", 2, "--gpus-max", 8,
            "--throughput-alpha", 1.0, "--throughput-beta", 0.5, "--restart-overhead-hours", 0.2,
            "--value", 300, "--miss-penalty", 100, "--json"]
    out = json.loads(run(*base, "--policy", "select", "--param", "pool=quick", "--stride-hours", 24).stdout)
    for key in ("rounds", "regret", "regret_slope", "mean_utility", "mean_cost", "deadline_met_fraction"):
        assert key in out, key
    assert out["rounds"] == out["runs"] > 5
    out = json.loads(run(*base, "--policy", "chc", "--param", "w=6", "--param", "v=2",
                         "--param", "predictor=persistence", "--stride-hours", 48).stdout)
    assert out["policy"] == "chc" and out["policy_report"]["solves"] > 0
    assert out["hard_deadline_met_fraction"] == 1.0
    out = json.loads(run(*base, "--policy", "prediction_free", "--param", "theta=0.5").stdout)
    assert out["policy"] == "prediction_free" and out["runs"] == 1
    bad = run(*base, "--policy", "chc", "--param", "predictor=crystal_ball", check=False)
    assert bad.returncode == 2 and "predictor must be 'oracle' or one of" in bad.stderr
    bad = run(*base, "--policy", "select", "--stride-hours", 1, "--windows", tmp_path / "w.csv", check=False)
    assert bad.returncode == 2 and "not both" in bad.stderr


@pytest.mark.parametrize("pool, expected", [
    ("default", 0),  # its CHC member
    ([("prediction_free", {}), ("greedy", {}), ("uniform_progress", {})], 2),  # no CHC: uniform progress
    ([("prediction_free", {}), ("greedy", {})], None),  # neither: a uniform draw
])
def test_the_blind_default_is_the_chc_member_else_uniform_progress(pool, expected):
    assert make_policy("select", {"pool": pool}).unwrapped.preferred() == expected
    assert make_policy("select", {"pool": pool, "prefer": None}).unwrapped.preferred() is None
    # as typed on the command line (--param prefer=...)
    assert make_policy("select", {"pool": pool, "prefer": "auto"}).unwrapped.preferred() == expected
    assert make_policy("select", {"pool": pool, "prefer": "none"}).unwrapped.preferred() is None


NO_SPOT = Regime(0.0, 0.0, 0.0, 0.9, 0.35, 0.0, 0.0, 0.9, 0.0)


@st.composite
def short_runs(draw, history=st.sampled_from([24]), jobs=st.sampled_from([12])):
    """A random synthetic market (one without spot among them), a random job and a few jobs' episodes on it."""
    regime = draw(st.sampled_from(["calm", "default", "volatile", "none"]))
    n_max, deadline = draw(st.integers(1, 8)), draw(st.integers(6, 20))
    past, n_jobs = draw(history), draw(jobs)
    market = synthetic_market(past + n_jobs * 6 + 2 * deadline + 24, slot_hours=1.0, requested=n_max,
                              od_price=3.0, seed=draw(st.integers(0, 10_000)),
                              regime=NO_SPOT if regime == "none" else regime)
    job = JobSpec(deadline_h=deadline, n_max=n_max, load=draw(st.floats(0.2, 0.9)),
                  value_factor=draw(st.sampled_from([0.6, 1.0, 1.5]))).job(market)
    return job, cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=6, history_hours=past, max_jobs=n_jobs)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(run=short_runs())
def test_the_blind_default_does_not_gamble_on_spot(run):
    """The member played before anything is known does not gamble on spot the way greedy does: on any market
    (one without spot too) it does on average at least about as well as uniform progress."""
    job, episodes = run
    sel = make_policy("select", {}).unwrapped
    name, params = sel.members()[sel.preferred()]
    blind = simulate(make_policy(name, params), episodes, job).utility
    up = simulate(make_policy("uniform_progress", {}), episodes, job).utility
    assert blind.mean() >= up.mean() - 0.02 * job.value


def test_chc_does_not_idle_while_spot_is_there_on_a_short_job():
    """The case the property above first found: a whole-job window on persistence forecasts saw every slot
    alike and left spot unused until it went (1.92 $/job against uniform progress's 2.92)."""
    market = synthetic_market(24 * 6, slot_hours=1.0, requested=1, od_price=3.0, regime="calm", seed=0)
    job = JobSpec(deadline_h=6, n_max=1, load=0.5, value_factor=0.6).job(market)
    episodes = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=6, history_hours=24, max_jobs=12)
    chc = simulate(make_policy("chc", {"w": 12, "v": 1, "predictor": "persistence"}), episodes, job).utility
    up = simulate(make_policy("uniform_progress", {}), episodes, job).utility
    assert chc.mean() >= up.mean() - 0.02 * job.value


@settings(max_examples=4, deadline=None, derandomize=True)
@given(run=short_runs(history=st.sampled_from([0, 48]), jobs=st.sampled_from([6, 12])))
def test_a3_is_at_least_the_better_published_rule_on_short_runs(run):
    """Issue 11's bar on markets and jobs nobody tuned for: A3 with its defaults, from the first rounds (a few
    jobs, with or without a past to warm up on), is about as good as the better of uniform progress and
    greedy, whichever that is on this market."""
    job, episodes = run
    a3 = simulate(make_policy("select", {}), episodes, job).utility.mean()
    best = max(simulate(make_policy(n, {}), episodes, job).utility.mean() for n in ("uniform_progress", "greedy"))
    assert a3 >= best - 0.05 * job.value


def test_no_online_policy_keeps_a3s_bar_on_every_market_from_the_first_round():
    """Why issue 11's A3 bar is checked over many markets and not promised on each: two markets that agree on
    their past and on their first 4 slots want opposite first moves. A cost-only job of 24 h on one GPU, 30 h to
    do it, 0.25-h restarts, spot at 0.3 x on demand; spot, there all through the past week, is gone for 4 h. On A
    it comes back for good and greedy, which waited, is best: an hour of on-demand in those 4 h costs at least
    (1 - 0.3) x its 0.75 h of work more. On C it flickers hour by hour and uniform progress, which kept its line
    on demand, is best: a policy idle for those 4 h has too little time left to use the flickering spot. The
    first round is blind (the warm-up replays the same past), so every policy, A3 included, is below the better
    of the two on A or on C; only over rounds can A3 follow the better one, with the regret of doing so."""
    from dataclasses import replace

    from spotlab.jobs.job import Job
    from spotlab.market.episodes import Episodes
    from spotlab.market.market import Market
    from spotlab.policies.registry import REGISTRY, policy_class

    past, gap, d, q = 168, 4, 30, 0.3
    job = Job(work=24.0, deadline_h=float(d), n_min=1, n_max=1, overhead_h=0.25)

    def episode(window: np.ndarray) -> Episodes:  # a week of spot, then `window`, spot at q x on demand
        avail = np.r_[np.ones(past), window].astype(np.int64)
        n = avail.size
        return Episodes.from_windows(Market(avail, np.full(n, q), np.ones(n), 1.0, requested=1), [past], [n],
                                     history=past)

    after = {"A": np.ones(d - gap), "C": np.tile([1, 0], d)[: d - gap]}
    eps = {k: episode(np.r_[np.zeros(gap), tail]) for k, tail in after.items()}
    cost = {n: {k: float(simulate(make_policy(n, {}), ep, job).cost[0]) for k, ep in eps.items()}
            for n in ("greedy", "uniform_progress")}
    assert cost["greedy"]["A"] < cost["uniform_progress"]["A"] and cost["uniform_progress"]["C"] < cost["greedy"]["C"]
    # idle through the gap, the best left on C is the optimum of the same job started 4 h late
    best_idle_c = float(simulate(make_policy("optimal", {"must_finish": True, "n_jobs": 1}), episode(after["C"]),
                                 replace(job, deadline_h=float(d - gap), hard_deadline_h=float(d - gap))).cost[0])
    assert best_idle_c > cost["uniform_progress"]["C"]
    # an hour on demand in the gap does at most 1 - overhead of work at 1 a GPU-hour, where spot does it at q
    a_floor = q * job.work + (1 - q) * (1 - job.overhead_h)
    assert a_floor > cost["greedy"]["A"]
    online = [n for n in REGISTRY if getattr(policy_class(n), "online", False)
              and not getattr(policy_class(n), "hindsight", False)]
    assert {"chc", "prediction_free", "select", "slack_reserve"} <= set(online)
    for name in online:  # each is above greedy on A or above uniform progress on C
        params = {"n_jobs": 1} if name == "select" else {}
        runs = {k: simulate(make_policy(name, params), ep, job) for k, ep in eps.items()}
        first = [(r.arrays["o"][0, :gap], r.arrays["s"][0, :gap]) for r in runs.values()]
        assert all(np.array_equal(x, y) for x, y in zip(*first)), name  # it cannot tell them apart
        if first[0][0].sum() > 0:
            assert float(runs["A"].cost[0]) >= a_floor - 1e-9, name
        else:
            assert float(runs["C"].cost[0]) >= best_idle_c - 1e-9, name


def test_select_leaves_its_preferred_member_only_on_evidence_by_default(setup):
    """The found case of `test_selection` through `Select.choose` with the default pool: the default `evidence`
    keeps the CHC member where `evidence=none` follows greedy's one-round lead."""
    market, job, _ = setup
    ep = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=2, history_hours=24, max_jobs=5)
    rows = np.array([[920.9, 961.7], [963.6, 963.6], [965.5, 965.5], [591.0, -555.9], [281.5, -848.7]])
    rows *= job.value / 1000.0  # into this job's utility range
    U = np.zeros((5, 4))
    U[:, [0, 3]] = rows  # CHC member, greedy
    U[:, [1, 2]] = rows[:, :1] - 50.0  # A2 and uniform progress a little behind CHC
    settled = np.ones((5, 4), dtype=np.int64)  # every job ends in its first slot: known by the next round
    args = (None, ep, job, 10, 0, settled)
    default = make_policy("select", {}).unwrapped.choose(U, *args)
    plain = make_policy("select", {"evidence": None}).unwrapped.choose(U, *args)
    assert np.all(default.chosen == 0)
    assert np.any(plain.chosen == 3)
