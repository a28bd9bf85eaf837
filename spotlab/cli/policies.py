"""`spotlab policies [NAME]`: the registered policies with their parameters, defaults and meanings, read from the
classes themselves (`Params.parameter_help`)."""

from __future__ import annotations

import argparse
import importlib
from typing import Any


def register(commands: Any) -> None:
    pol = commands.add_parser("policies", help="list the policies with their parameters (defaults and meaning)",
                              description="Without NAME: every registered policy, one line each, with its parameters "
                                          "and defaults. With NAME: that policy's parameters, defaults and meaning.")
    pol.add_argument("name", nargs="?", help="a policy name, e.g. chc")
    pol.set_defaults(run=run)


def _summary(cls: type) -> str:
    doc = (cls.__doc__ or "").strip() or (importlib.import_module(cls.__module__).__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def run(args: argparse.Namespace) -> int:
    from ..policies.registry import REGISTRY, policy_class

    if args.name is None:
        for name in REGISTRY:
            params = ", ".join(f"{k}={d!r}" for k, d, _ in policy_class(name).parameter_help()) or "(no parameters)"
            print(f"{name:17s} {params}")
        print("\n`spotlab policies NAME` explains a policy's parameters; set them with --param KEY=VALUE.")
        return 0
    cls = policy_class(args.name)
    print(f"{args.name}: {_summary(cls)}")
    rows = [(f"{k}={d!r}", meaning) for k, d, meaning in cls.parameter_help()]
    if not rows:
        print("  no parameters")
    width = max((len(k) for k, _ in rows), default=0)
    for k, meaning in rows:
        print(f"  {k:{width}s}  {meaning}")
    return 0
