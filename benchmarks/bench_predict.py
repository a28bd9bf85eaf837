"""Rolling-origin evaluation time per model on a 2-week 10-min trace (GCP H100, us-central1-a).

14 days = 2016 ten-minute slots; a one-week training window (1008 slots), a refit every day (144 slots),
forecasts at every origin for h = 1, 2, 3, 6, 12. Prints, side by side, the seconds per model, the share
spent in refits vs forecasting (update + predict), the estimated cost of refitting at every origin
instead, and for ARIMA and ETS what re-using the fitted
parameters saves: a full refit (cold), a warm-started refit (ARIMA), moving the fitted model over the
day's 144 new slots without re-estimation (`update`, what the evaluation does between refits), and
statsmodels' own way of re-using parameters on the new window (`apply` for ARIMA, a fixed-parameter
Holt-Winters filter for ETS).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from spotlab.data.locate import dataset_path
from spotlab.market.load import load_market
from spotlab.predict.evaluate import rolling_origin
from spotlab.predict.registry import MODELS, make_predictor

SLOT_H = 1 / 6
DAYS, TRAIN, EVERY = 14, 1008, 144
HORIZONS = (1, 2, 3, 6, 12)


def timed(fn):
    tic = time.perf_counter()
    out = fn()
    return time.perf_counter() - tic, out


def reuse_ratios(y: np.ndarray, name: str) -> dict[str, float]:
    """Mean seconds per refit point for each way of getting a model ready for the next day."""
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    points = list(range(TRAIN - 1 + EVERY, y.size - 12, EVERY))
    cold, warm, update, sm_reuse = [], [], [], []
    warm_model = make_predictor(name).fit(y[points[0] - EVERY - TRAIN + 1: points[0] - EVERY + 1], slot_hours=SLOT_H)
    for t in points:
        window = y[t - TRAIN + 1: t + 1]
        prev = make_predictor(name).fit(y[t - EVERY - TRAIN + 1: t - EVERY + 1], slot_hours=SLOT_H)
        s, _ = timed(lambda: make_predictor(name).fit(window, slot_hours=SLOT_H))
        cold.append(s)
        if name == "arima":
            s, _ = timed(lambda: warm_model.fit(window, slot_hours=SLOT_H))
            warm.append(s)
            s, _ = timed(lambda: prev.result_.apply(window))
            sm_reuse.append(s)
        else:
            def fixed() -> None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ExponentialSmoothing(window, initialization_method="known", initial_level=prev.level_[-1]).fit(
                        smoothing_level=prev.alpha_, optimized=False)
            s, _ = timed(fixed)
            sm_reuse.append(s)
        s, _ = timed(lambda: prev.update(y[t - EVERY + 1: t + 1]))
        update.append(s)
    out = {"full refit": float(np.mean(cold)), "reuse (update)": float(np.mean(update)),
           "statsmodels reuse": float(np.mean(sm_reuse))}
    if warm:
        out["warm refit"] = float(np.mean(warm))
    return out


def main() -> None:
    market = load_market(dataset_path("markets/gcp_h100_probes.csv.gz"), zone="us-central1-a", slot_hours=SLOT_H)
    market = market.window(0, DAYS * 144)
    y = market.avail.astype(float)
    print(f"{market.name}: {len(market)} slots of 10 min; train {TRAIN} slots, refit every {EVERY}, "
          f"h = {','.join(map(str, HORIZONS))}")
    for name in MODELS:  # imports (statsmodels, scikit-learn) are paid once, not per model run
        make_predictor(name).fit(y[:TRAIN], slot_hours=SLOT_H).predict(12)
    print(f"{'model':15s} {'total s':>8s} {'refits s':>9s} {'forecast s':>11s} {'refit share':>12s} "
          f"{'fits':>5s} {'origins':>8s} {'ms/origin':>10s} {'refit/slot s':>13s} {'MAE h=1':>8s} {'MAE h=12':>9s}")
    for name in MODELS:
        total, res = timed(lambda: rolling_origin(market, name, HORIZONS, TRAIN, EVERY))
        tm, sc = res.timing, res.scores()
        share = tm["fit_s"] / max(tm["fit_s"] + tm["forecast_s"], 1e-12)
        every_slot = tm["fit_s"] / tm["n_fits"] * tm["n_origins"]  # estimated cost of refitting at every origin
        print(f"{name:15s} {total:8.2f} {tm['fit_s']:9.2f} {tm['forecast_s']:11.2f} {share:11.0%} "
              f"{tm['n_fits']:5d} {tm['n_origins']:8d} {1e3 * tm['forecast_s'] / tm['n_origins']:10.3f} "
              f"{every_slot:13.1f} {sc.loc[1, 'mae']:8.3f} {sc.loc[12, 'mae']:9.3f}")
    print("(refit/slot s: what refitting at every origin instead of updating the fitted model would cost)")
    print("\nre-using fitted parameters at a refit point (mean seconds over the refit points; a day = 144 new slots)")
    for name in ("arima", "ets"):
        r = reuse_ratios(y, name)
        parts = "  ".join(f"{k} {v:.4f}s" for k, v in r.items())
        ratio = r["full refit"] / max(r["reuse (update)"], 1e-12)
        extra = f", warm refit {r['full refit'] / r['warm refit']:.1f}x faster" if "warm refit" in r else ""
        print(f"{name:6s} {parts}   -> full refit / reuse = {ratio:,.0f}x{extra}")


if __name__ == "__main__":
    main()
