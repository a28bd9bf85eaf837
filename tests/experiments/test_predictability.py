"""spotlab.experiments.predictability on small synthetic markets (no data files needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spotlab.experiments import predictability as pr
from spotlab.market.market import Market

START = pd.Timestamp("2024-01-01 00:00")


def _markets(n: int) -> dict:
    rng = np.random.default_rng(0)
    a = np.clip(np.cumsum(rng.integers(-1, 2, n)), 0, 4).astype(int)
    price = 1.0 + 0.1 * np.sin(np.arange(n) / 5.0)
    return {"z1": Market(a, price, 3.0, slot_hours=1.0, requested=4, start=START),
            "z2": Market(np.ones(n, dtype=int), 1.0, 3.0, slot_hours=1.0, requested=1, start=START)}


def test_plan_skips_short_traces_and_constant_prices():
    plan = pr.evaluation_plan({1.0: {"long": _markets(120), "short": _markets(30)}},
                              models=["persistence", "ets"], horizons=[1, 3], train_hours=48)
    ok = plan[plan["status"] == "ok"]
    assert set(zip(ok["dataset"], ok["target"])) == {("long", "availability"), ("long", "price")}
    assert (plan.loc[plan["dataset"] == "short", "reason"].str.contains("too little history")).all()


def test_price_acf_skips_constant_prices():
    acf = pr.price_autocorrelation(_markets(100), max_lag_hours=10)
    assert set(acf["zone"]) == {"z1"}
    assert acf.loc[acf["lag_hours"] == 0, "acf"].iloc[0] == 1.0


def test_best_models_and_error_meaning():
    errors = pd.DataFrame({
        "dataset": "d", "zone": "z", "slot_hours": 1.0, "target": "price",
        "model": ["persistence", "persistence", "ets", "ets"], "h": [1, 2, 1, 2],
        "mae": [0.2, 0.4, 0.1, 0.5], "skill_mae": [0.0, 0.0, 0.5, -0.25], "rmse": [0.3, 0.5, 0.2, 0.6],
        "requested": 4, "mean_price": 2.0,
    })
    best = pr.best_models(errors)
    assert best.loc[0, "model"] == "persistence"  # mean MAE 0.3 vs 0.3: the tie goes to persistence
    meaning = pr.error_meaning(errors, job_gpu_hours=100)
    assert np.allclose(meaning["usd_error_100_gpu_h_job"], [20.0, 40.0])
    assert np.allclose(meaning["mae_frac_price"], [0.1, 0.2])
