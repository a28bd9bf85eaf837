"""The names of the files each notebook writes into `paper_figures/`, declared once.

Each experiments module declares what its notebook writes (`cant_be_late.OUTPUTS`, `horizon.MOTIVATION`,
...); the notebook saves under those names and `spotlab.notebooks.claims` reads by the same names, so renaming a file
cannot leave a claim reading a file that nobody writes. The outputs of notebooks 00 (`spotlab.jobs.profiles`),
01 (`experiments.market_stats`), 08 (`spotlab.cotune`) and 09 (`experiments.cotune_cluster`) are declared
here. `tests/notebooks/test_claims.py` checks both directions.

    OUT = declare("03", motivation_jobs="csv", setup="json", paired_vs_a2=FIGURE)
    OUT.motivation_jobs.csv   # '03_motivation_jobs.csv'
    save(fig, table, OUT.paired_vs_a2)   # 03_paired_vs_a2.png and .csv (`figures.saver`)
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Iterator

from ..errors import OutputError

FIGURE = ("png", "csv")  # what `figures.saver`'s save(fig, table, output) writes: the figure, the table behind it
KINDS = ("csv", "json", "png")


@dataclass(frozen=True)
class Output:
    """One output of a notebook: the files `<notebook>_<name>.<kind>` for each declared kind."""

    notebook: str
    name: str
    kinds: tuple[str, ...]

    @property
    def stem(self) -> str:
        return f"{self.notebook}_{self.name}"

    def file(self, kind: str) -> str:
        if kind not in self.kinds:
            raise OutputError(f"{self.stem} is declared as {'/'.join(self.kinds)}, not {kind}")
        return f"{self.stem}.{kind}"

    @property
    def csv(self) -> str:
        return self.file("csv")

    @property
    def json(self) -> str:
        return self.file("json")

    @property
    def png(self) -> str:
        return self.file("png")

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self.file(k) for k in self.kinds)


@dataclass(frozen=True)
class Outputs:
    """The outputs of one notebook; `outputs.<name>` is the `Output` declared under that name."""

    notebook: str
    items: tuple[Output, ...]

    def __getattr__(self, name: str) -> Output:
        for o in self.__dict__.get("items", ()):
            if o.name == name:
                return o
        if name.startswith("__"):
            raise AttributeError(name)
        have = ", ".join(o.name for o in self.__dict__.get("items", ()))
        raise OutputError(f"notebook {self.__dict__.get('notebook')} declares no output {name!r} (it has: {have})")

    def __iter__(self) -> Iterator[Output]:
        return iter(self.items)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(f for o in self.items for f in o.files)


def declare(notebook: str, **outputs: str | tuple[str, ...]) -> Outputs:
    """The outputs of notebook `notebook` ("03"): name -> a kind ("csv", "json", "png") or several."""
    items = []
    for name, kinds in outputs.items():
        kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
        bad = [k for k in kinds if k not in KINDS]
        if bad or not kinds:
            raise OutputError(f"output {notebook}_{name}: kinds are {', '.join(KINDS)} (got {kinds!r})")
        items.append(Output(notebook, name, kinds))
    return Outputs(notebook, tuple(items))


# ------------------------------------------------------- notebooks computed outside the experiments modules

THROUGHPUT = declare("00", throughput_vs_gpus=FIGURE, residuals=FIGURE, step_breakdown=FIGURE, fits=("csv", "json"))
SPOT_MARKETS = declare("01", zone_summary="csv", availability_over_time=FIGURE, spot_price_over_time=FIGURE,
                       daily_profile=FIGURE, k_available=FIGURE, spell_lengths=FIGURE, spell_lengths_all_spells="csv",
                       autocorrelation=FIGURE, a100_availability=FIGURE, marketplace_over_time=FIGURE)
CONFIG_PREDICTION = declare("08", setup="json", runs="csv", data=FIGURE, spread="csv", learning_curve=FIGURE,
                            learning_curve_summary="csv", predicted_vs_measured=FIGURE, unseen_model=FIGURE,
                            key_numbers=("csv", "json"))
CLUSTER_SCHEDULING = declare("09", jct_by_source=FIGURE, jct_vs_load=FIGURE, sensitivity=FIGURE)

# where each notebook's outputs are declared: module, attribute
DECLARED_IN = {
    "00": ("spotlab.experiments.outputs", "THROUGHPUT"),
    "01": ("spotlab.experiments.outputs", "SPOT_MARKETS"),
    "01b": ("spotlab.experiments.cant_be_late", "OUTPUTS"),
    "01c": ("spotlab.experiments.leaderboard", "OUTPUTS"),
    "02": ("spotlab.experiments.predictability", "OUTPUTS"),
    "03": ("spotlab.experiments.horizon", "MOTIVATION"),
    "04": ("spotlab.experiments.horizon", "SENSITIVITY"),
    "05": ("spotlab.experiments.horizon", "COMMITMENT"),
    "06": ("spotlab.experiments.comparison", "SELECTION"),
    "07": ("spotlab.experiments.comparison", "MAIN"),
    "08": ("spotlab.experiments.outputs", "CONFIG_PREDICTION"),
    "09": ("spotlab.experiments.outputs", "CLUSTER_SCHEDULING"),
    "10": ("spotlab.experiments.rl_scheduling", "OUTPUTS"),
    "11": ("spotlab.experiments.multi_region", "OUTPUTS"),
}


def by_notebook() -> dict[str, Outputs]:
    """Every notebook's declared outputs, read from the module that declares them."""
    out = {}
    for nb, (module, attr) in DECLARED_IN.items():
        outputs = getattr(importlib.import_module(module), attr)
        if outputs.notebook != nb:
            raise OutputError(f"{module}.{attr} declares notebook {outputs.notebook}, expected {nb}")
        out[nb] = outputs
    return out
