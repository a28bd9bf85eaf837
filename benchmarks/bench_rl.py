"""Learning scheduler speed: environment steps per second, and training episodes per minute.

Workload: ``--trace`` on ``--preset`` at offered load ``--load``, windows of ``--size`` jobs (the training split;
jobs no pool can hold are left out). Prints, as the median of ``--repeat`` runs:

- environment steps per second with random legal actions (observation, mask and engine, no network), over
  ``--episodes`` episodes;
- the same with the agent's network choosing (one forward pass per step, as in training's rollouts);
- training: environment steps per second and finished episodes per minute of MaskablePPO for ``--timesteps``
  steps (rollouts and updates), one thread, as `spotlab rl train` runs.

    python benchmarks/bench_rl.py [--preset philly] [--trace philly-gpw] [--timesteps 4096]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from spotlab.rl.train import TrainSettings, make_env, train
from spotlab.rl.workload import Workload, windows


def env_steps_per_s(env, episodes: int, choose) -> tuple[float, int]:
    """Steps per second over ``episodes`` episodes (windows in turn), and the steps taken."""
    steps, started = 0, time.perf_counter()
    for k in range(episodes):
        obs, _ = env.reset(options={"window": k % len(env.windows)})
        done = False
        while not done:
            obs, _, done, _, _ = env.step(choose(obs, env.action_masks()))
            steps += 1
    return steps / (time.perf_counter() - started), steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="philly")
    ap.add_argument("--trace", default="philly-gpw")
    ap.add_argument("--load", type=float, default=1.0)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--timesteps", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    workload = Workload(preset=args.preset, trace=args.trace, load=args.load, size=args.size, drop_unplaceable=True)
    wins = windows(workload)
    settings = TrainSettings(workload=workload)
    env = make_env(settings, "train", windows=wins)
    rng = np.random.default_rng(0)

    def random_legal(obs, mask):
        return int(rng.choice(np.flatnonzero(mask)))

    rates = [env_steps_per_s(env, args.episodes, random_legal) for _ in range(args.repeat)]
    print(f"{args.trace} on {args.preset} ({len(wins['train'])} training windows of {args.size} jobs, load "
          f"{args.load:g})")
    print(f"environment, random legal actions: {statistics.median(r for r, _ in rates):,.0f} steps/s "
          f"({rates[0][1]} steps in {args.episodes} episodes)")
    net_rates, train_rates, episode_rates = [], [], []
    for k in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            result = train(settings, tmp, timesteps=args.timesteps, windows=wins)
            seconds = time.perf_counter() - started
            train_rates.append(result.timesteps / seconds)
            episode_rates.append(60.0 * result.episodes / seconds)
            if k == 0:
                from spotlab.rl.agent import load_agent

                agent = load_agent(tmp)

                def network(obs, mask):
                    return int(agent.model.predict(obs, action_masks=mask, deterministic=False)[0])

                net_rates.append(env_steps_per_s(env, args.episodes, network)[0])
    print(f"environment, network choosing: {statistics.median(net_rates):,.0f} steps/s")
    print(f"training (MaskablePPO, {args.timesteps} steps, n_steps {settings.n_steps}, {settings.n_epochs} epochs): "
          f"{statistics.median(train_rates):,.0f} steps/s, {statistics.median(episode_rates):,.1f} episodes/min")


if __name__ == "__main__":
    main()
