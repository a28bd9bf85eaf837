"""Figure helpers shared by the notebooks: saving a figure with the numbers behind it, stacking a
per-zone statistic over files, and the figures more than one notebook shows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from .outputs import Output, Outputs


def project_root() -> Path:
    """The checkout the notebooks belong to: the folder above the `spotlab` package when it holds `notebooks/`
    (an editable install, what `make` sets up), else the nearest folder above the working directory with a
    `pyproject.toml`, else the working directory."""
    here = Path(__file__).resolve().parents[2]
    if (here / "notebooks").is_dir() and (here / "pyproject.toml").is_file():
        return here
    cwd = Path.cwd().resolve()
    return next((p for p in (cwd, *cwd.parents) if (p / "pyproject.toml").is_file()), cwd)


def project_path(path: str | Path) -> Path:
    """A relative path is taken from the project root, not from where the notebook runs: JupyterLab starts a
    notebook's kernel in `notebooks/`, papermill in the root, and both must write to `paper_figures/`."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else project_root() / p


def saver(out_dir: str | Path, prefix: str | Outputs) -> Callable:
    """`save(fig, table, output)` writing `output.png` and the `.csv` behind it into `out_dir` (relative:
    under the project root), for an `Output` declared as a `FIGURE` (`spotlab.experiments.outputs`); a plain
    `name` writes `<prefix>_<name>.png/.csv`. The figure stays open, so the notebook also shows it inline."""
    out = project_path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pre = prefix.notebook if isinstance(prefix, Outputs) else prefix

    def save(fig, table: pd.DataFrame, name: str | Output) -> None:
        png, csv = (name.png, name.csv) if isinstance(name, Output) else (f"{pre}_{name}.png", f"{pre}_{name}.csv")
        fig.savefig(out / png, dpi=120, bbox_inches="tight")
        table.to_csv(out / csv, index=False)

    return save


def sweep_result(out_dir: str | Path, table: pd.DataFrame, keys: list[str]) -> dict:
    """Write the notebook's headline numbers to `sweep_result.json` in `out_dir`, flattened as
    `"<key values joined by />/<column>": value`, so that `spotlab sweep` puts them in its table (one row
    per point, one column per number)."""
    flat: dict = {}
    for row in table.to_dict(orient="records"):
        head = "/".join(str(row[k]) for k in keys)
        for col, val in row.items():
            if col in keys:
                continue
            if isinstance(val, (np.floating, float)):
                val = None if not math.isfinite(float(val)) else float(val)
            elif isinstance(val, (np.integer, np.bool_)):
                val = val.item()
            elif not isinstance(val, (int, bool, str)) and val is not None:
                continue
            flat[f"{head}/{col}" if head else str(col)] = val
    out = project_path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep_result.json").write_text(json.dumps(flat, indent=1))
    return flat


def by_dataset(fn: Callable, markets: Mapping[str, dict], **kw) -> pd.DataFrame:
    """Apply a per-zone statistic to every file and stack the results with a `dataset` column."""
    parts = {key: fn(ms, **kw) for key, ms in markets.items()}
    return pd.concat(parts, names=["dataset", None]).reset_index(level=0).reset_index(drop=True)


def daily_profile_figure(daily: pd.DataFrame, files: Mapping, price_dataset: str = "aws_v100"):
    """Mean availability fraction by hour of day (± one standard error) per file with a real clock,
    and the spot price by hour for `price_dataset`."""
    import matplotlib.pyplot as plt

    daily = daily.assign(frac_se=daily["frac_std"] / np.sqrt(daily["count"]))
    keys = list(dict.fromkeys(daily["dataset"]))
    fig, axes = plt.subplots(1, len(keys) + 1, figsize=(16, 4))
    for ax, key in zip(axes, keys):
        for zone, g in daily[daily["dataset"] == key].groupby("zone", sort=False):
            ax.plot(g["hour"], g["frac_mean"], marker="o", ms=3, label=zone)
            ax.fill_between(g["hour"], g["frac_mean"] - g["frac_se"], g["frac_mean"] + g["frac_se"], alpha=0.15)
        ax.set_title(files[key].title, fontsize=10, loc="left")
        ax.set_ylabel("mean available / requested")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=7, ncol=2)
    for zone, g in daily[daily["dataset"] == price_dataset].groupby("zone", sort=False):
        axes[-1].plot(g["hour"], g["spot_price_mean"], marker="o", ms=3, label=zone)
    axes[-1].set_title("AWS V100 spot price by hour", fontsize=10, loc="left")
    axes[-1].set_ylabel("mean spot price (USD per GPU-hour)")
    axes[-1].legend(fontsize=7, ncol=2)
    for ax in axes:
        ax.set_xlabel("hour of day (UTC)")
        ax.set_xticks(range(0, 24, 3))
    fig.tight_layout()
    return fig, daily
