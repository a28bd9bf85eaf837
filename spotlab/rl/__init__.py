"""RLTune's learning scheduler on the shared cluster engine: which queued job starts next, learned by PPO.

- `workload`: episodes, windows of consecutive trace jobs on a cluster preset, split by time (train /
  validation / test, never overlapping);
- `decisions`: when the agent is asked and what a choice does (shared by the environment and the scheduler);
- `features`: the 7 normalised features of each of the first Q queued jobs;
- `reward`: job scores and the relative gain over a heuristic on the same window;
- `env`: the `gymnasium.Env` (action masks in sb3-contrib's convention);
- `policy_net`: the per-job scoring network (permutation-equivariant), as a MaskablePPO policy;
- `teachers`, `imitation`: rules to imitate for a warm start;
- `train`: seeded, deterministic, resumable training with checkpoints and their settings;
- `agent`: a trained agent loaded for use (also `spotlab.rl.scheduler`, the agent as a scheduler);
- `evaluate`: agent vs heuristics on held-out windows, paired, with 95% intervals;
- `cli`: `spotlab rl train` / `spotlab rl evaluate`.

Nothing is imported here: torch loads only with `policy_net`, `agent` and `train`'s functions.
"""
