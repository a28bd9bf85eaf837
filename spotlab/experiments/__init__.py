"""Experiment building blocks behind the notebooks (SPEC §7): plain functions returning tidy tables.

- `market_stats`: descriptive statistics of the real spot-market traces (notebook 01);
- `cant_be_late`: the cross-check against the Can't Be Late simulator's published costs (notebook 01b);
- `predictability`: forecast error vs horizon per model on the real traces (notebook 02);
- `setups`: the paper's job model on real and synthetic markets, shared by notebooks 03-07;
- `horizon`: A1 vs A2 with accurate and inaccurate forecasts, error sensitivity, the (w, v) plane (03-05);
- `comparison`: policy selection over rounds and the main comparison with the baselines (06, 07);
- `leaderboard`: every policy on the Can't Be Late leaderboard's 1,080 runs (01c);
- `cotune_cluster`: CoTune's job completion time per scheduling policy and configuration source (09);
- `figures`: saving a figure together with the numbers behind it;
- `cells`: the runner every resumable experiment uses (rows appended as cells finish, resume, parallel);
- `outputs`: the names of the files each notebook writes (declared once, read by `spotlab.notebooks.claims`);
- `published`: the numbers others published that we compare with (the paper's, the Can't Be Late ones).
"""
