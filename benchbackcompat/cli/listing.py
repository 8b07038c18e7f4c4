"""``benchbackcompat list`` and ``describe``: what is installed, and a method's hyperparameters and support."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

LISTABLE = ("methods", "scenarios", "datasets", "backbones", "presets")
PRESET_WIDTH = 70  # characters of a preset's description a line: `list presets` fits a 100-column terminal


def register(sub: Any) -> None:
    listing = sub.add_parser("list", help="list what is available")
    listing.add_argument("what", choices=LISTABLE, help="what to list")
    listing.add_argument("--preset", default="quick", help="preset whose scenarios `list scenarios` shows (default: quick)")
    listing.add_argument("--params", action="store_true", help="with `list methods`: every method's hyperparameters")

    describe = sub.add_parser("describe", help="a method's hyperparameters (type, default, range), scenarios and paper")
    describe.add_argument("method", help="method name (see `list methods`)")
    describe.add_argument("--preset", default="quick", help="preset whose scenarios are checked for support")
    listing.set_defaults(handler=cmd_list)
    describe.set_defaults(handler=cmd_describe)


def cmd_list(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from benchbackcompat.runtime.logs import log

    if args.what == "methods":  # importing the plugins imports torch: their table is kept between calls
        from benchbackcompat.cli.answer_cache import cached_answer, default_cache_dir

        conflicts: list[str] = []

        def methods_table() -> tuple[str, bool]:
            from benchbackcompat.execution.plugin_host import PluginHost

            host = PluginHost()
            host.load_all()
            rows = [[name, "available", cls.description] for name, cls in sorted(host.methods().items())]
            rows += [[name, "unavailable", failure.error] for name, failure in sorted(host.failures.items())]
            rows += [[name, "conflict", why] for name, why in sorted(host.conflicts.items())]
            if args.params:
                from benchbackcompat.report.describe import parameter_rows

                rows = [[name, status, "; ".join(f"{p['name']}={p['default']}" for p in parameter_rows(host.methods()[name].Params))
                         if status == "available" else text] for name, status, text in rows]
            conflicts.extend(host.conflicts.values())
            table = tabulate(rows, headers=["method", "status", "hyperparameters (defaults; `describe METHOD` for more)"
                                            if args.params else "description"], tablefmt="github")
            return table, not (host.failures or host.conflicts)  # a broken plugin is asked again next time

        print(cached_answer(default_cache_dir(), ["list", "methods", str(args.params)], methods_table))
        for why in conflicts:
            log.error(why)
        if conflicts:
            return 2
    elif args.what == "scenarios":
        from benchbackcompat.execution.presets import load_preset

        preset = load_preset(args.preset)
        rows = [[name, table.get("kind", "?"), table.get("description", "")] for name, table in preset["scenarios"].items()]
        print(tabulate(rows, headers=["scenario", "kind", f"description (preset {args.preset})"], tablefmt="github"))
    elif args.what == "presets":
        from benchbackcompat.execution.presets import available_presets, load_preset

        import textwrap

        rows = [[name, Path(str(path)).name, textwrap.fill(load_preset(name).get("description", ""), PRESET_WIDTH)]
                for name, path in available_presets().items()]
        print(tabulate(rows, headers=["preset", "file", "description"], tablefmt="simple"))
        print("\n(files: " + ", ".join(sorted({str(Path(str(p)).parent) for p in available_presets().values()}))
              + "; `run --preset FILE` takes any preset file)")
    else:
        from benchbackcompat.execution.plugin_host import PluginHost

        host = PluginHost()
        host.load_all()
        host.register_extensions()
        if args.what == "datasets":
            from benchbackcompat.data.registry import DATASETS as registry
        else:
            from benchbackcompat.models.registry import BACKBONES as registry
        rows = [[name, entry.description] for name, entry in sorted(registry.items())]
        if args.what == "backbones":
            rows.append(["timm:<name>", "any timm model by name, e.g. timm:vit_base_patch16_224"])
        print(tabulate(rows, headers=[args.what[:-1], "description"], tablefmt="github"))
    return 0


def cmd_describe(args: argparse.Namespace) -> int:
    from benchbackcompat.cli.answer_cache import cached_answer, default_cache_dir
    from benchbackcompat.execution.presets import preset_path

    def description() -> tuple[str, bool]:  # importing the plugins imports torch: the answer is kept between calls
        from benchbackcompat.report.describe import describe_method
        from benchbackcompat.config import validate_model
        from benchbackcompat.execution.plan import plan_of
        from benchbackcompat.execution.request import RunRequest

        request = validate_model(RunRequest, {"preset": args.preset, "scenarios": ["all"], "methods": [args.method]},
                                 "describe")
        plan = plan_of(request)
        return describe_method(args.method, type(plan.methods[args.method]), plan.run.scenarios, args.preset), True

    preset = Path(str(preset_path(args.preset)))
    print(cached_answer(default_cache_dir(), ["describe", args.method, args.preset], description, inputs=[preset]))
    return 0
