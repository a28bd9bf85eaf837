"""Run one notebook over a grid of parameters (`spotlab sweep`); the entry point is `run.run_sweep`."""
