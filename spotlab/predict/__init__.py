"""Forecasting spot availability and prices (SPEC §5): models, rolling evaluation, a noisy oracle.

One small class per model behind the interface of `base.Predictor` (fit on the history up to t,
forecast h = 1..w, quantiles, cheap `update`). `make_predictor("arima", order=(1, 0, 1))` builds one by
name; `evaluate.rolling_origin` scores it without look-ahead; `oracle.NoisyOracle` is the controlled-error
forecast for sensitivity sweeps.
"""
