"""The agent's policy (`spotlab.rl.policy_net`): its `forward` with masks and `act` give sb3-contrib's answers bit
for bit (actions, values, log-probabilities, the draws from torch's generator), over random weights, observations,
batches and masks, sampled and argmax."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from hypothesis import given, settings
from hypothesis import strategies as st
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

from spotlab.rl.features import N_FEATURES
from spotlab.rl.policy_net import JobScoringPolicy


def policy(slots: int, hidden: int, seed: int, scale: float) -> JobScoringPolicy:
    th.manual_seed(seed)
    obs_space = gym.spaces.Box(0.0, 1.0, (slots, N_FEATURES), dtype=np.float32)
    pol = JobScoringPolicy(obs_space, gym.spaces.Discrete(slots), lambda _: 3e-4, hidden=hidden)
    with th.no_grad():
        for p in pol.parameters():
            p.mul_(scale)  # near-equal logits (ties after exp) up to far-apart ones
    return pol


def observations(rng: np.random.Generator, batch: int, slots: int):
    obs = rng.random((batch, slots, N_FEATURES)).astype(np.float32)
    masks = np.zeros((batch, slots), dtype=bool)
    for b in range(batch):
        n = int(rng.integers(1, slots + 1))
        obs[b, n:] = 0.0
        masks[b, :n] = rng.random(n) < 0.8
        masks[b, 0] |= not masks[b].any()
    return obs, masks


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([2, 5, 16, 128]), st.sampled_from([1, 3, 128]),
       st.sampled_from([0.01, 1.0, 30.0]), st.booleans())
def test_forward_is_sb3_contribs_bit_for_bit(seed, slots, batch, scale, deterministic):
    pol = policy(slots, 8, seed, scale)
    obs, masks = observations(np.random.default_rng(seed), batch, slots)
    x = th.as_tensor(obs)
    outs = []
    for forward in (MaskableActorCriticPolicy.forward, JobScoringPolicy.forward):
        th.manual_seed(seed + 1)
        with th.no_grad():
            got = forward(pol, x, deterministic, masks)
        outs.append((got, th.rand(3)))  # the generator is left in the same state
    (a, ra), (b, rb) = outs
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape and th.equal(u, v)
    assert th.equal(ra, rb)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([2, 5, 128]), st.sampled_from([0.01, 1.0, 30.0]),
       st.booleans())
def test_act_is_predicts_choice(seed, slots, scale, deterministic):
    pol = policy(slots, 8, seed, scale)
    obs, masks = observations(np.random.default_rng(seed), 1, slots)
    th.manual_seed(seed + 1)
    want, _ = MaskableActorCriticPolicy.predict(pol, obs[0], action_masks=masks[0], deterministic=deterministic)
    after_want = th.rand(3)
    th.manual_seed(seed + 1)
    got = pol.act(obs[0], masks[0], deterministic)
    assert got == int(want) and masks[0][got]
    assert th.equal(th.rand(3), after_want)


def test_forward_without_masks_is_the_parents():
    pol = policy(4, 8, 0, 1.0)
    obs, _ = observations(np.random.default_rng(0), 2, 4)
    th.manual_seed(0)
    a = MaskableActorCriticPolicy.forward(pol, th.as_tensor(obs))
    th.manual_seed(0)
    b = pol.forward(th.as_tensor(obs))
    assert all(th.equal(u, v) for u, v in zip(a, b))
    with pytest.raises(Exception):
        pol.act(obs[0], np.ones(3, dtype=bool))  # a mask of the wrong size is refused
