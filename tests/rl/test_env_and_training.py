"""The learning scheduler (spotlab.rl): its environment on the cluster engine, the agent's network, training and the
`spotlab rl` command line. Synthetic windows on a small cluster need no data; the trace tests skip without it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sb3_contrib")

from spotlab.cli.main import main  # noqa: E402
from spotlab.cluster.simulate import simulate  # noqa: E402
from spotlab.cluster.state import Cluster, Option, SimJob  # noqa: E402
from spotlab.rl.env import SchedulingEnv  # noqa: E402
from spotlab.rl.reward import SCORES, gain  # noqa: E402
from spotlab.rl.teachers import teacher  # noqa: E402
from spotlab.rl.workload import Window, Workload  # noqa: E402

CLUSTER = Cluster.parse("A:2x4,B:3x2")
SIZES = {"A": (1, 2, 3, 4, 8), "B": (1, 2, 4, 6)}  # what each pool can ever hold


def synthetic_window(seed: int, n: int = 40, index: int = 0) -> Window:
    """``n`` jobs arriving in bursts on a small two-type cluster, so that queues form and choices matter."""
    rng = np.random.default_rng(seed)
    t, jobs = 0.0, []
    for j in range(n):
        t += float(rng.exponential(60.0)) if rng.random() < 0.5 else 0.0
        gpu = "A" if rng.random() < 0.6 else "B"
        jobs.append(SimJob(j, t, float(rng.lognormal(6.0, 1.2)) + 1.0,
                           (Option(gpu, int(rng.choice(SIZES[gpu])), 1.0, 1.0, False),)))
    return Window("train", index, CLUSTER, tuple(jobs))


def run_rule(env: SchedulingEnv, window: int, rule) -> tuple[float, dict, int]:
    """Episode reward, last info and steps of a rule (obs, mask) -> slot on one window."""
    obs, info = env.reset(options={"window": window})
    done, steps, reward = False, 0, 0.0
    while not done:
        obs, reward, done, _, info = env.step(rule(obs, env.action_masks()))
        steps += 1
    return reward, info, steps


# ------------------------------------------------------------------------------------------- environment


def test_check_env_passes():
    from gymnasium.utils.env_checker import check_env

    env = SchedulingEnv([synthetic_window(s, index=s) for s in range(3)], slots=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings count as failures
        check_env(env, skip_render_check=True)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), slots=st.sampled_from([2, 4, 16]))
def test_fcfs_through_the_environment_is_the_engines_fifo(seed, n, slots):
    """Always choosing the first legal slot (the head) gives exactly the engine's FCFS start times."""
    window = synthetic_window(seed, n)
    env = SchedulingEnv([window], slots=slots)
    reward, _, _ = run_rule(env, 0, teacher("fcfs"))
    mine = env.engine.result("env").jobs
    ref = simulate(window.cluster, window.jobs, scheduler="fifo").jobs
    np.testing.assert_array_equal(mine["start_s"].to_numpy(), ref["start_s"].to_numpy())
    assert reward == 0.0  # FCFS against the FCFS baseline


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60))
def test_fcfs_with_backfilling_through_the_environment_is_the_engines_easy(seed, n):
    """With backfill=True, always choosing the head gives exactly the engine's EASY backfilling start times."""
    window = synthetic_window(seed, n)
    env = SchedulingEnv([window], slots=128, backfill=True)
    run_rule(env, 0, teacher("fcfs"))
    mine = env.engine.result("env").jobs
    ref = simulate(window.cluster, window.jobs, scheduler="easy").jobs
    np.testing.assert_array_equal(mine["start_s"].to_numpy(), ref["start_s"].to_numpy())


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 60), policy_seed=st.integers(0, 100), backfill=st.booleans())
def test_masks_never_empty_while_work_remains(seed, n, policy_seed, backfill):
    """Any legal choices: every observation is in [0, 1], every mask has a legal slot, every job ends."""
    env = SchedulingEnv([synthetic_window(seed, n)], slots=8, backfill=backfill)
    rng = np.random.default_rng(policy_seed)
    obs, _ = env.reset(options={"window": 0})
    done = False
    while not done:
        mask = env.action_masks()
        assert mask.any() and mask[0]
        assert obs.shape == (8, 7) and obs.min() >= 0.0 and obs.max() <= 1.0
        obs, reward, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
    assert env.engine.ended == n and np.isfinite(reward)


@pytest.mark.parametrize("score", SCORES)
def test_a_heuristic_against_itself_gains_nothing(score):
    for base in (0.0, 1.0, 37.5):
        assert gain(base, base, score) == 0.0
    env = SchedulingEnv([synthetic_window(3)], slots=8, score=score, baseline="fifo")
    assert run_rule(env, 0, teacher("fcfs"))[0] == 0.0


def test_choosing_by_slot_is_permutation_equivariant():
    """The scoring network gives each job the same logit wherever it sits; the value ignores the order."""
    import torch as th

    from spotlab.rl.policy_net import JobScorer

    th.manual_seed(0)
    net = JobScorer(slots=6, hidden=8)
    x = th.rand(3, 6, 7) + 0.01
    x[:, 4:] = 0.0  # two padding slots
    perm = th.tensor([3, 0, 2, 1, 4, 5])  # reorder the real jobs only
    logits, value = net(x.reshape(3, -1))
    logits_p, value_p = net(x[:, perm].reshape(3, -1))
    th.testing.assert_close(logits_p, logits[:, perm])
    th.testing.assert_close(value_p, value)


# -------------------------------------------------------------------------------------------- training


def _tiny(tmp_path, name: str, seed: int = 0, timesteps: int = 256):
    from spotlab.rl.train import TrainSettings, train

    wins = {"train": [synthetic_window(s, index=s) for s in range(3)]}
    settings_ = TrainSettings(workload=Workload(size=40), slots=8, seed=seed, n_steps=64, batch_size=32, n_epochs=2)
    return train(settings_, tmp_path / name, timesteps=timesteps, windows=wins), settings_, wins


def _weights(folder):
    from spotlab.rl.agent import load_agent

    return {k: v.clone() for k, v in load_agent(folder).model.policy.state_dict().items()}


def test_same_seed_same_weights_and_resume(tmp_path):
    _tiny(tmp_path, "a", seed=1)
    _tiny(tmp_path, "b", seed=1)
    _tiny(tmp_path, "c", seed=2)
    a, b, c = _weights(tmp_path / "a"), _weights(tmp_path / "b"), _weights(tmp_path / "c")
    assert all(np.array_equal(a[k].numpy(), b[k].numpy()) for k in a)
    assert not all(np.array_equal(a[k].numpy(), c[k].numpy()) for k in a)
    resumed, _, _ = _tiny(tmp_path, "a", seed=1, timesteps=384)  # continues from a's checkpoint
    assert resumed.timesteps == 384 and resumed.rollouts == 6
    assert not all(np.array_equal(a[k].numpy(), v.numpy()) for k, v in _weights(tmp_path / "a").items())


def test_training_leaves_no_folders_in_the_temp_directory(tmp_path, monkeypatch):
    import tempfile

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _tiny(tmp_path, "a", seed=1)
    assert list(scratch.iterdir()) == []


def test_the_agent_as_a_scheduler_decides_as_in_its_environment(tmp_path):
    from spotlab.rl.agent import load_agent
    from spotlab.rl.scheduler import RLAgent

    _, settings_, wins = _tiny(tmp_path, "m")
    agent = load_agent(tmp_path / "m")
    env = SchedulingEnv(wins["train"], slots=settings_.slots)
    for w, window in enumerate(wins["train"]):
        run_rule(env, w, lambda o, m: int(agent.model.predict(o, action_masks=m, deterministic=True)[0]))
        ref = simulate(window.cluster, window.jobs, scheduler=RLAgent(str(tmp_path / "m"))).jobs
        np.testing.assert_array_equal(env.engine.result("env").jobs["start_s"].to_numpy(), ref["start_s"].to_numpy())


# --------------------------------------------------------------------------------------- command line


@pytest.mark.parametrize("argv, says", [
    (["rl", "train", "--preset", "nope", "--trace", "philly-gpw", "--out", "{tmp}/m"], "unknown cluster preset"),
    (["rl", "evaluate", "--preset", "philly", "--trace", "philly-gpw", "--model", "{tmp}/none"], "does not exist"),
    (["rl", "train", "--preset", "philly", "--trace", "{tmp}/bad.csv", "--out", "{tmp}/m"], "no known job-trace"),
    (["rl", "train", "--preset", "philly", "--trace", "{tmp}/big.csv", "--out", "{tmp}/m"], "can never run"),
    (["rl", "train", "--preset", "philly", "--trace", "x", "--out", "{tmp}/m", "--minutes", "-1"], "minutes"),
])
def test_bad_inputs_end_in_one_line(tmp_path, capsys, argv, says):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    rows = "".join(f"j{i},{60 * i},3600,{512 if i == 3 else 1}\n" for i in range(10))
    (tmp_path / "big.csv").write_text("job_id,submission_time,duration,num_gpu\n" + rows)
    try:
        code = main([a.format(tmp=tmp_path) for a in argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err


# ------------------------------------------------------------------------------------ a real claim


def test_a_short_training_beats_fcfs_and_random_on_held_out_windows(dataset, tmp_path):
    """Helios (helios-gpw, jobs no pool holds left out) on the 136-GPU Helios preset at offered load 1, windows of
    128 jobs, the last 40% of the trace held out (34 test windows): after 4,096 PPO steps (about 20 s), without
    any warm start, the agent (argmax) has a lower mean bounded slowdown on the test windows than the registered
    ``fifo`` and ``random`` (a random queued job, waited for when it does not fit) schedulers.
    Measured over training seeds 0-5 with these settings (mean bounded slowdown): agent 22.8, 30.8, 22.8, 30.8,
    158.3, 22.6; fifo 176.0, random 203.9; so it holds on every seed, narrowly on seed 4 (EASY backfilling, the
    best heuristic here, 19.5: the agent does not beat that in 4,096 steps). This test trains seed 0."""
    dataset("traces/helios-gpw/helios_data_training.csv.gz")
    from spotlab.rl.evaluate import run_windows
    from spotlab.rl.scheduler import RLAgent
    from spotlab.rl.train import TrainSettings, train
    from spotlab.rl.workload import windows

    workload = Workload(preset="helios", trace="helios-gpw", load=1.0, size=128, drop_unplaceable=True,
                        fractions=(0.5, 0.1, 0.4))
    wins = windows(workload, download=False)
    settings_ = TrainSettings(workload=workload, slots=32, n_steps=256, batch_size=64, seed=0)
    train(settings_, tmp_path / "m", timesteps=4096, windows=wins)
    rows = run_windows(wins["test"], ["fifo", "random", RLAgent(str(tmp_path / "m"))], names=["fifo", "random", "rl"])
    mean = rows.groupby("scheduler")["slowdown"].mean()
    assert len(wins["test"]) >= 30
    assert mean["rl"] < mean["fifo"] and mean["rl"] < mean["random"], mean.to_dict()
