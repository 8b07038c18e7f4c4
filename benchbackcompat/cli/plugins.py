"""``benchbackcompat validate`` and ``new-method``: checking a preset and methods, and creating a plugin package."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    validate = sub.add_parser("validate", help="validate a preset and method hyperparameters without running")
    validate.add_argument("--preset", default="quick", help="preset name or TOML file (default: quick)")
    validate.add_argument("--methods", default="", help="comma-separated methods to validate too")

    new_method = sub.add_parser("new-method", help="create an installable method plugin package (see docs/writing-a-method.md)")
    new_method.add_argument("name", help="method name: lower-case letters, digits and hyphens, e.g. my-method")
    new_method.add_argument("--dir", type=Path, help="folder to create (default ./bbc-NAME)")
    validate.set_defaults(handler=cmd_validate)
    new_method.set_defaults(handler=cmd_new_method)


def cmd_validate(args: argparse.Namespace) -> int:
    from benchbackcompat.config import validate_model
    from benchbackcompat.execution.plan import plan_of
    from benchbackcompat.execution.request import RunRequest, split_list

    methods = split_list(args.methods) or ["independent"]
    request = validate_model(RunRequest, {"preset": args.preset, "scenarios": ["all"], "methods": methods}, "validate")
    scenarios = plan_of(request).run.scenarios
    print(f"preset {args.preset!r}: {len(scenarios)} scenarios valid; methods valid: {', '.join(methods)}")
    return 0


def cmd_new_method(args: argparse.Namespace) -> int:
    from benchbackcompat.cli.scaffold import create_plugin

    files = create_plugin(args.name, args.dir)
    root = files[0].parent
    print(f"created the plugin package of method {args.name!r} in {root}:")
    print("\n".join(f"  {path}" for path in files))
    print(f"next: pip install -e {root} && benchbackcompat list methods && python -m pytest {root / 'tests'}")
    return 0
