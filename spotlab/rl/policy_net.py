"""The agent's network: one small MLP scores every queued job from its own 7 features (shared across queue
slots), so the policy is permutation-equivariant: permuting the queue permutes the logits the same way, and a
job's score does not depend on which slot it sits in. The value head pools per-job embeddings (mean and max over
the real jobs, padding excluded) and is therefore permutation-invariant.

`JobScoringPolicy` plugs this into sb3-contrib's `MaskableActorCriticPolicy`: the network's per-slot scores are
the action logits (masked there), its pooled value the critic. Its `forward` with masks (every rollout step) and
`act` (an agent's choice) do sb3-contrib's tensor operations in sb3-contrib's order, so the same actions, values
and log-probabilities bit for bit and the same draws from torch's generator, without building and validating
its distribution objects three times per step (that took more time than the network). torch is imported by this
module: import it only where torch is wanted (training, evaluating an agent).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
import torch.nn.functional as F
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from torch import nn

from .features import N_FEATURES

__all__ = ["JobScorer", "JobScoringPolicy", "masked_log_probs"]

SIZE_FEATURE = 1  # `features.FEATURES[1]`: > 0 for every real job, 0 for padding


def _mlp(sizes: list[int], last_gain: float | None = None) -> nn.Sequential:
    layers: list[nn.Module] = []
    for k, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(a, b)
        last = k == len(sizes) - 2
        nn.init.orthogonal_(lin.weight, gain=(last_gain if last and last_gain is not None else 2 ** 0.5))
        nn.init.zeros_(lin.bias)
        layers.append(lin)
        if not last:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class JobScorer(nn.Module):
    """Per-slot logits and a pooled value from flattened ``(slots, 7)`` observations (module doc).

    Exposes what sb3's policies expect of an ``mlp_extractor``: ``latent_dim_pi`` (= slots: the logits),
    ``latent_dim_vf`` (= 1: the value) and `forward_actor` / `forward_critic`.
    """

    def __init__(self, slots: int, hidden: int = 32, n_features: int = N_FEATURES) -> None:
        super().__init__()
        self.slots, self.n_features = int(slots), int(n_features)
        self.latent_dim_pi, self.latent_dim_vf = self.slots, 1
        self.score = _mlp([n_features, hidden, hidden, 1], last_gain=0.01)
        self.embed = _mlp([n_features, hidden, hidden])
        self.value = _mlp([2 * hidden, hidden, 1], last_gain=1.0)

    def _jobs(self, features: th.Tensor) -> th.Tensor:
        return features.reshape(features.shape[0], self.slots, self.n_features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return self.score(self._jobs(features)).squeeze(-1)

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        x = self._jobs(features)
        real = (x[..., SIZE_FEATURE] > 0).unsqueeze(-1).to(x.dtype)  # (batch, slots, 1)
        h = th.tanh(self.embed(x))
        count = real.sum(dim=1).clamp(min=1.0)
        mean = (h * real).sum(dim=1) / count
        top = (h * real - 2.0 * (1.0 - real)).max(dim=1).values  # tanh >= -1: padding never wins
        return self.value(th.cat([mean, top], dim=-1))

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)


def masked_log_probs(logits: th.Tensor, masks: Any) -> th.Tensor:
    """The log-probabilities sb3-contrib's masked categorical ends with: normalised logits, masked-out slots set
    to -1e8, normalised again (``MaskableCategorical``: construction, then `apply_masking`)."""
    logits = logits - logits.logsumexp(dim=-1, keepdim=True)
    masks = th.as_tensor(masks, dtype=th.bool, device=logits.device).reshape(logits.shape)
    logits = th.where(masks, logits, th.tensor(-1e8, dtype=logits.dtype, device=logits.device))
    return logits - logits.logsumexp(dim=-1, keepdim=True)


def _actions(log_probs: th.Tensor, deterministic: bool) -> th.Tensor:
    """sb3-contrib's choice from `masked_log_probs`: the most likely slot, or one draw (torch's generator)."""
    probs = F.softmax(log_probs, dim=-1)
    if deterministic:
        return th.argmax(probs, dim=1)
    return th.multinomial(probs, 1, True).T.reshape(-1)


class JobScoringPolicy(MaskableActorCriticPolicy):
    """MaskablePPO's policy with the per-job scoring network; ``hidden`` is its width (``policy_kwargs``)."""

    def __init__(self, *args: Any, hidden: int = 32, **kwargs: Any) -> None:
        self.hidden = int(hidden)
        kwargs["ortho_init"] = False  # JobScorer initialises its own layers
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        slots = int(self.action_space.n)
        self.mlp_extractor = JobScorer(slots, self.hidden, int(self.observation_space.shape[-1]))

    def _build(self, lr_schedule) -> None:
        self._build_mlp_extractor()
        self.action_net = nn.Identity()  # the scorer's outputs are the logits
        self.value_net = nn.Identity()  # and its pooled output the value
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def forward(self, obs: th.Tensor, deterministic: bool = False,
                action_masks: np.ndarray | None = None) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Actions, values and their log-probabilities, as sb3-contrib's `forward` (module doc)."""
        if action_masks is None:
            return super().forward(obs, deterministic, action_masks)
        # a rollout step (sb3 calls it without gradients): inference mode, the same kernels without autograd's
        # bookkeeping on every one of its ~50 small operations
        with th.inference_mode(not th.is_grad_enabled()):
            latent_pi, values = self.mlp_extractor(self.extract_features(obs))
            log_probs = masked_log_probs(latent_pi.view(-1, int(self.action_space.n)), action_masks)
            actions = _actions(log_probs, deterministic)
            log_prob = log_probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
        return actions.reshape(-1), values, log_prob

    def act(self, obs: np.ndarray, mask: np.ndarray, deterministic: bool = True) -> int:
        """The slot chosen for one observation and its mask: `predict`'s answer (module doc)."""
        self.set_training_mode(False)
        x = th.as_tensor(np.asarray(obs).reshape((-1, *self.observation_space.shape)), device=self.device)
        with th.no_grad():
            latent_pi = self.mlp_extractor.forward_actor(self.extract_features(x))
            action = _actions(masked_log_probs(latent_pi.view(-1, int(self.action_space.n)), mask), deterministic)
        return int(action[0])

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["hidden"] = self.hidden
        return data
