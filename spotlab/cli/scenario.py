"""`spotlab scenario NAME --policy P`: a benchmark scenario across zones by name (the multi-region leaderboard's, or
SkyNomad's on any of its zones), its windows cut as that benchmark cuts them, under its rule set, with the peers'
numbers beside spotlab's where the data folder's README gives them (`experiments.zone_benchmarks`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import SpotlabError
from .args import (
    jsonable,
    key_value,
    output_file,
    progress_option,
    values_by_name,
    writing,
)


def register(commands: Any) -> None:
    s = commands.add_parser(
        "scenario", help="run policies on a benchmark scenario across zones (leaderboard/..., skynomad/...)",
        description="Run registered policies on a named benchmark scenario across zones, under its rule set. "
                    "Names: leaderboard/<scenario>[/<windows>] (e.g. leaderboard/2_zones_same_region/8-15), "
                    "skynomad/<ratio> (the shared six zones) or skynomad/<ratio>/<zone>+<zone>+...")
    s.add_argument("name", nargs="?", help="the scenario (omit with --list)")
    s.add_argument("--list", action="store_true", help="list the named scenarios")
    s.add_argument("--policy", action="append", default=[],
                   help="a registered policy (repeat for several; default: the scenario's baselines and optimum)")
    s.add_argument("--param", action="append", default=[], type=key_value, metavar="POLICY.KEY=VALUE",
                   help="a parameter of one of the policies (repeatable, once per key)")
    s.add_argument("--rules", choices=["spotlab", "skynomad", "leaderboard"],
                   help="simulate under another rule set than the scenario's (e.g. spotlab's own)")
    s.add_argument("--per-run", help="write one row per (policy, window) to this CSV file")
    s.add_argument("--json", action="store_true", help="print one JSON object")
    progress_option(s)
    s.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import json

    from ..experiments import zone_benchmarks as zb
    from ..policies.registry import make_policy

    if args.list:
        if args.name is not None:
            raise SpotlabError("give either a scenario NAME or --list")
        for name in zb.scenario_names():
            print(name)
        return 0
    if args.name is None:
        raise SpotlabError("name a scenario (spotlab scenario --list shows them)")
    policies = args.policy or list(zb.default_policies(args.name))
    params = values_by_name(args.param, "--param", policies, "--policy", "up_probe.samples=3")
    for p in policies:  # unknown names and parameters fail before any data is read
        make_policy(p, params.get(p))
    output_file(args.per_run, "--per-run", (".csv",))
    rows = zb.run(policies, [args.name], params, rules=args.rules, progress=args.progress)
    table = zb.compare(rows)
    if args.rules is not None:  # the peers' numbers are under the scenario's own rules
        table = table.drop(columns="published")
    else:  # ... and with the policies' defaults
        table["published"] = table["published"].where(~table["policy"].isin(list(params)))
    if args.per_run:
        with writing(args.per_run, "--per-run"):
            rows.to_csv(args.per_run, index=False)
    if args.json:
        print(json.dumps({"scenario": rows.scenario.iloc[0], "rules": args.rules or "the scenario's",
                          "policies": table.astype(object).where(table.notna(), None).to_dict(orient="records")},
                         allow_nan=False, default=jsonable))
    else:
        print(f"{rows.scenario.iloc[0]} ({rows.window.nunique()} windows, rules: {args.rules or 'its own'})")
        print(table.drop(columns="scenario").to_string(index=False, float_format=lambda x: f"{x:.2f}", na_rep=""))
    return 0
