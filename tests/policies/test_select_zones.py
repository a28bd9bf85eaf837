"""A3 across zones (issue 41, item 4), on random markets of several zones under every rule set: its outcome in a
round is its chosen member's (cost, completion, zones, probes and moves included), its choices are the selector's
on the members' utilities, which lie in the range its regret bound assumes, and the bound holds; on the real
benchmarks' windows (skipped without the data folder) and from the command line."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError
from spotlab.jobs.job import make_job
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.market.zoned_episodes import ZonedEpisodes
from spotlab.market.zones import ZonedMarket
from spotlab.policies.registry import make_policy
from spotlab.policies.run import run_policy
from spotlab.policies.select import POOLS, known_from, utility_range, warmup_episodes
from spotlab.policies.selection_run import losses_from_utilities
from spotlab.policies.selectors import SELECTORS, warm_started
from spotlab.policies.semantics import Semantics
from spotlab.simulation.engine import simulate
from spotlab.simulation.interface import Action

RULES = {"spotlab": Semantics(), "skynomad": Semantics.skynomad(), "leaderboard": Semantics.leaderboard()}
REGIONS = ("us-east-1", "us-west-2", "europe-west3", "asia-south2")
QUICK = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# selectors as A3 runs them: its default (FlipFlop, prefer, evidence gate), and without the gate or `prefer`
VARIANTS = ({}, {"evidence": None}, {"prefer": None, "evidence": None}, {"algorithm": "hedge", "prefer": None})


def zoned_market(seeds, regions, hours, slot_hours):
    markets = tuple(synthetic_market(hours, slot_hours=slot_hours, requested=4, seed=s,
                                     regime=("volatile", "default", "calm")[s % 3]) for s in seeds)
    return ZonedMarket(markets, tuple(f"{r}-{chr(97 + i)}" for i, r in enumerate(regions)), tuple(regions))


@st.composite
def cases(draw):
    """A random market of 2-4 zones in random regions, 4-10 overlapping windows (some with a past to warm up
    on), a random job that fits them, a rule set (sometimes with give-up) and a selector."""
    z = draw(st.integers(2, 4))
    seeds = draw(st.lists(st.integers(0, 500), min_size=z, max_size=z, unique=True))
    regions = [draw(st.sampled_from(REGIONS)) for _ in range(z)]
    dt = draw(st.sampled_from([1.0, 0.5]))
    deadline = float(draw(st.integers(10, 16)))
    history = draw(st.sampled_from([0.0, 0.0, 24.0]))
    market = zoned_market(seeds, regions, history + 120.0, dt)
    work = deadline / draw(st.sampled_from([1.2, 1.5, 2.0]))
    n_max = draw(st.sampled_from([1, 2, 4]))
    n_min = draw(st.sampled_from([n_max, 1]))
    value = draw(st.sampled_from([0.0, 60.0, 400.0]))
    job = make_job(work * n_max, deadline, gpus_min=n_min, gpus_max=n_max, value=value,
                   miss_penalty=draw(st.sampled_from([0.0, 50.0])),
                   overhead_hours=draw(st.sampled_from([0.0, 0.2, 0.5])),
                   checkpoint_gb=draw(st.sampled_from([0.0, 50.0, 500.0])))
    episodes = cut_windows(market, stride_hours=draw(st.sampled_from([4.0, 8.0, 16.0])), horizon_hours=deadline,
                           history_hours=history, skip_hours=history, max_jobs=draw(st.integers(4, 10)))
    rules = draw(st.sampled_from(sorted(RULES)))
    sem = RULES[rules]
    if draw(st.booleans()) and value > 0:
        sem = dataclasses.replace(sem, give_up=True)
    params = {"pool": "zones", "n_jobs": 1, "seed": draw(st.integers(0, 3)), "warmup": draw(st.booleans()),
              **draw(st.sampled_from(VARIANTS))}
    return episodes, job, sem, params


def members_run(sel, episodes, job, sem, seed):
    """Every pool member, run on its own as a policy under the same rules and net."""
    return [simulate(make_policy(n, p, safety_net=sem.safety_net, give_up=sem.give_up), episodes, job, sem.settings,
                     seed) for n, p in sel.members()]


@given(cases(), st.integers(0, 5))
@QUICK
def test_a3_across_zones_plays_its_chosen_members_run(case, seed):
    """In every round A3's cost, completion, utility, deadline and path through the zones are its chosen member's,
    run on its own (probes billed as the member's were, moves and give-ups included); where every member meets a
    window's hard deadline, so does A3."""
    episodes, job, sem, params = case
    policy = make_policy("select", params, safety_net=sem.safety_net, give_up=sem.give_up)
    res = simulate(policy, episodes, job, sem.settings, seed)
    sel = policy.unwrapped
    chosen, rows = sel.run_.chosen, np.arange(episodes.n)
    runs = members_run(sel, episodes, job, sem, seed)
    pick = lambda f: np.array([f(runs[k])[w] for w, k in zip(rows, chosen)])  # noqa: E731
    np.testing.assert_allclose(res.cost, pick(lambda r: r.cost), rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(res.completion_h, pick(lambda r: r.completion_h))
    np.testing.assert_allclose(res.utility, pick(lambda r: r.utility), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(res.utility, sel.run_.utility_chosen, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(res.arrays["gave_up"], pick(lambda r: r.arrays["gave_up"]))
    for key in ("zone", "o", "s", "cost"):
        np.testing.assert_array_equal(res.arrays[key] * res.arrays["alive"],
                                      pick(lambda r: r.arrays[key] * r.arrays["alive"]), err_msg=key)
    met = np.stack([r.met_hard_deadline for r in runs], axis=1)
    np.testing.assert_array_equal(res.met_hard_deadline, met[rows, chosen])
    assert np.all(res.met_hard_deadline[met.all(axis=1)])


@given(cases())
@QUICK
def test_a3_across_zones_is_its_selector_on_utilities_within_the_bounds_range(case):
    """A3's choices are its selector's on the members' utilities (with the same delays, warm-up and `prefer`), every
    utility lies in the range the selector scales losses from (the precondition of its regret bound, with egress
    and probes), and without the evidence gate the regret against the best member in hindsight is within FlipFlop's
    bound: twice AdaHedge's (de Rooij et al. 2014; tests/policies/test_selectors.py), plus two ranges per round of
    extra delay."""
    episodes, job, sem, params = case
    policy = make_policy("select", params, safety_net=sem.safety_net, give_up=sem.give_up)
    simulate(policy, episodes, job, sem.settings)
    sel, run = policy.unwrapped, policy.unwrapped.run_
    horizon = sel.ctx_.horizon
    lo, hi = utility_range(episodes, job, horizon, sem.settings)
    assert (run.lo, run.hi) == (lo, hi)
    U = run.member_utilities
    for block in (U, sel.warm_):
        if block is not None:
            assert np.all((block >= lo) & (block <= hi)), (block.min(), lo, block.max(), hi)
    known = known_from(episodes.zones[0], horizon, sel.settled_)
    algo = sel.algorithm
    extra = {"prefer": sel.preferred(across_zones=True), "evidence": sel.evidence} if algo in ("flipflop",) else {}
    again = warm_started(SELECTORS[algo], sel.warm_, U, lo, hi, known_from=known, seed=run.seed, names=run.names,
                         **extra)
    np.testing.assert_array_equal(again.chosen, run.chosen)
    if algo == "flipflop" and sel.evidence is None and sel.warm_ is None:
        loss = losses_from_utilities(U, lo, hi)
        T, K = loss.shape
        best = loss.sum(axis=0).min()
        ada = (hi - lo) * (2 * math.sqrt(max(best * (T - best), 0.0) * math.log(K) / T) + 16 / 3 * math.log(K) + 2)
        delay = int(np.max(known - np.arange(1, T + 1)))
        assert run.regret <= 2 * ada + 2 * delay * (hi - lo) + 1e-9


class Worst:
    """N_max GPUs on demand in every slot, moving to the next zone (another region) each slot and probing every
    zone: the dearest run the rules allow, which never finishes (a restart every slot)."""

    name = "worst"

    def reset(self, ctx):
        self.job, self.z = ctx.job, ctx.zoned.z

    def act(self, obs):
        for z in range(self.z):
            obs.probe(np.full(obs.active.size, z))
        return Action(np.full(obs.active.size, self.job.n_max), np.zeros(obs.active.size, dtype=np.int64), None,
                      (obs.zone + 1) % self.z)


@pytest.mark.parametrize("rules", sorted(RULES))
def test_the_utility_range_holds_the_dearest_run_of_every_rule_set(rules):
    """The worst a round can end with counts what a run across zones can pay beyond GPUs: the worst run sits within
    the range, and, under rules that bill moves and probes, below a range that forgot them."""
    market = zoned_market([1, 2, 3], ("us-east-1", "europe-west3", "asia-south2"), 60.0, 1.0)
    job = make_job(40.0, 12.0, gpus_max=4, overhead_hours=1.0, checkpoint_gb=500.0, miss_penalty=10.0)
    episodes = cut_windows(market, stride_hours=12.0, horizon_hours=12.0, history_hours=0, max_jobs=3)
    settings_ = RULES[rules].settings
    res = simulate(Worst(), episodes, job, settings_)
    horizon = res.arrays["alive"].shape[1]
    lo, hi = utility_range(episodes, job, horizon, settings_)
    assert np.all(res.utility >= lo) and np.all(res.utility <= hi)
    forgot, _ = utility_range(episodes, dataclasses.replace(job, checkpoint_gb=0.0), horizon,
                              dataclasses.replace(settings_, visibility="free"))
    if rules != "leaderboard":  # moves and probes are free there
        assert np.all(res.utility < forgot)


def test_the_zones_pool_prefers_a1_across_zones_and_uniform_progress_in_one():
    """Blind, A3 across zones plays A1 across zones, as it plays CHC in one zone; on one zone the pool's blind member
    is uniform progress, as before (the pool has no one-zone CHC)."""
    market = zoned_market([3, 4, 5], REGIONS[:3], 100.0, 1.0)
    job = make_job(8.0, 12.0)
    episodes = cut_windows(market, stride_hours=12.0, horizon_hours=12.0, history_hours=0, max_jobs=4)
    names = [n for n, _ in POOLS["zones"]]
    policy = make_policy("select", {"pool": "zones", "n_jobs": 1})
    simulate(policy, episodes, job, Semantics().settings)
    assert names[int(np.argmax(policy.unwrapped.run_.probabilities[0]))] == "chc_zones"
    one = ZonedEpisodes(episodes.zones[:1], episodes.names[:1], episodes.regions[:1])
    policy = make_policy("select", {"pool": "zones", "n_jobs": 1})
    simulate(policy, one, job, Semantics().settings)
    assert names[int(np.argmax(policy.unwrapped.run_.probabilities[0]))] == "uniform_progress"


def test_a3_warms_up_on_the_past_of_every_zone():
    """With a past before the first round, the warm-up windows across zones are that past, slot for slot, in every
    zone, and A3 starts from what the pool did there (then still plays its chosen member's run)."""
    market = zoned_market([7, 8], ("us-east-1", "europe-west3"), 24.0 + 80.0, 1.0)
    job = make_job(6.0, 10.0, overhead_hours=0.2, checkpoint_gb=50.0)
    episodes = cut_windows(market, stride_hours=2.0, horizon_hours=10.0, history_hours=24.0, max_jobs=12)
    warm = warmup_episodes(episodes, 10)
    assert isinstance(warm, ZonedEpisodes) and warm.z == 2 and warm.n == 8
    for z in range(2):
        np.testing.assert_array_equal(warm.zones[z].avail[-1], episodes.zones[z].history_avail[0, -10:])
    policy = make_policy("select", {"pool": "zones", "n_jobs": 1})
    res = simulate(policy, episodes, job, Semantics().settings)
    sel = policy.unwrapped
    assert sel.report()["warmup_rounds"] == 8 and sel.warm_.shape == (8, len(POOLS["zones"]))
    np.testing.assert_allclose(res.utility, sel.run_.utility_chosen, rtol=1e-12, atol=1e-9)


def test_an_unknown_pool_is_refused_when_the_policy_is_made():
    with pytest.raises(PolicyError, match=r"select: unknown pool 'zone'; use one of default, wide, quick, zones"):
        make_policy("select", {"pool": "zone"})


# ------------------------------------------------------------------------------------------------- real data


def scenario_or_skip(dataset, name):
    from spotlab.experiments import zone_benchmarks as zb

    dataset(zb.LEADERBOARD_DIR + "us-east-1a_v100_1__0.json")
    dataset(zb.SKYNOMAD_DIR + "us-central1-a_h100_16__full.json")
    if name.startswith("skynomad"):  # two of its windows: a quick check
        return zb.skynomad_scenario(zb.SHARED_SIX, float(name.split("/")[1]), windows=[0, 3])
    return zb.scenario(name)


# A1 across zones takes seconds to minutes a window on the leaderboard: left out of its cases' pool (SkyNomad has it)
WITHOUT_A1 = [(n, p) for n, p in POOLS["zones"] if n != "chc_zones"]


@pytest.mark.parametrize("name, rules, pool", [("leaderboard/2_zones_same_region/0-1", None, "without A1"),
                                               ("leaderboard/3_regions_diverse/0", "spotlab", "without A1"),
                                               ("skynomad/1.5", None, "zones")])
def test_a3_on_the_benchmarks_plays_its_chosen_members_runs(dataset, name, rules, pool):
    sc = scenario_or_skip(dataset, name)
    sem = sc.semantics if rules is None else RULES[rules]
    members_of = POOLS["zones"] if pool == "zones" else WITHOUT_A1
    made = []
    res = run_policy("select", {"pool": pool if pool == "zones" else members_of, "n_jobs": 1}, sc.episodes, sc.job,
                     sem, wrap=lambda p: made.append(p) or p)
    chosen = made[0].unwrapped.run_.chosen
    members = {n: run_policy(n, p, sc.episodes, sc.job, sem) for n, p in members_of}
    want = np.array([members[members_of[k][0]].cost[w] for w, k in enumerate(chosen)])
    np.testing.assert_allclose(res.cost, want, rtol=1e-12, atol=1e-9)
    met = np.stack([members[n].met_hard_deadline for n, _ in members_of], axis=1)
    assert np.all(res.met_hard_deadline[met.all(axis=1)])


def test_cli_runs_a3_with_the_zones_pool_on_a_scenario(dataset):
    scenario_or_skip(dataset, "leaderboard/2_zones_same_region")
    cmd = [sys.executable, "-m", "spotlab", "scenario", "leaderboard/2_zones_same_region/0", "--policy", "select",
           "--policy", "up_failover", "--param", "select.pool=zones", "--param", "select.n_jobs=1"]
    ok = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0].startswith("leaderboard/2_zones_same_region/0 (1 windows")
    assert any(line.split()[:1] == ["select"] for line in lines[2:]) and "mean_cost" in lines[1]
    bad = subprocess.run(cmd[:-4] + ["--param", "select.pool=zone"], capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and bad.stdout == ""
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()] and "unknown pool 'zone'" in bad.stderr
