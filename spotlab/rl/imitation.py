"""Imitation warm start: fit the policy to a teacher's choices (`spotlab.rl.teachers`) before PPO.

The teacher runs through the training environment once on every training window; its (observation, mask,
choice) triples are the data, and the policy's masked log-likelihood of the teacher's choices is maximised with
the policy's own optimiser for ``epochs`` passes in shuffled minibatches (seeded). Behaviour cloning of this
kind gives PPO a start that already backfills, instead of a uniform random policy.
"""

from __future__ import annotations

import numpy as np

from .teachers import teacher

__all__ = ["demonstrations", "imitate"]


def demonstrations(env, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The teacher's observations, masks and choices over every window of ``env``, in window order."""
    rule = teacher(name)
    obs_l, mask_l, act_l = [], [], []
    for w in range(len(env.windows)):
        obs, _ = env.reset(options={"window": w})
        done = False
        while not done:
            mask = env.action_masks()
            a = rule(obs, mask)
            obs_l.append(obs)
            mask_l.append(mask)
            act_l.append(a)
            obs, _, done, _, _ = env.step(a)
    return np.asarray(obs_l, np.float32), np.asarray(mask_l, bool), np.asarray(act_l, np.int64)


def imitate(model, env, name: str, *, epochs: int = 20, batch_size: int = 256, seed: int = 0) -> float:
    """Fit ``model``'s policy to teacher ``name`` on ``env``'s windows; the last epoch's mean negative
    log-likelihood."""
    import torch as th

    obs, masks, acts = demonstrations(env, name)
    policy = model.policy
    rng = np.random.default_rng(seed)
    loss_value = float("nan")
    policy.set_training_mode(True)
    for _ in range(epochs):
        order = rng.permutation(len(acts))
        total = 0.0
        for k in range(0, len(order), batch_size):
            idx = order[k:k + batch_size]
            _, log_prob, _ = policy.evaluate_actions(th.as_tensor(obs[idx]), th.as_tensor(acts[idx]),
                                                     action_masks=masks[idx])
            loss = -log_prob.mean()
            policy.optimizer.zero_grad()
            loss.backward()
            policy.optimizer.step()
            total += float(loss) * len(idx)
        loss_value = total / max(len(acts), 1)
    policy.set_training_mode(False)
    return loss_value
