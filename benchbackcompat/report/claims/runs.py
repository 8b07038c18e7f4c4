"""The ``benchbackcompat run`` commands that store a claim's declared run: its deciding scenario with every compared
row at the declared seeds, one command per set of hyperparameters (rows with the methods' own defaults share one)."""
from __future__ import annotations

import shlex

from benchbackcompat.execution.presets import format_override
from benchbackcompat.report.claims.declared import Claim
from benchbackcompat.report.claims.judge import compared_rows


def declared_runs(claim: Claim, preset: str = "") -> list[str]:
    """The commands that run the deciding scenario of ``claim`` with its compared rows at seeds 0 .. seeds-1 and the
    configuration values it names (``deciding_config``); [] for a claim without a deciding scenario."""
    if not claim.deciding:
        return []
    groups: dict[tuple[str, ...], list[str]] = {}
    for method, params in compared_rows(claim):
        options = tuple(format_override(f"methods.{method}.{key}", value) for key, value in sorted(params.items()))
        groups.setdefault(options, []).append(method)
    common = [("--preset", preset)] if preset else []
    common += [("--scenario", claim.deciding)]
    tail = [("--seeds", f"0-{claim.seeds - 1}")]
    tail += [("--set", format_override(key, value)) for key, value in claim.deciding_config.items()]
    commands = []
    for options, methods in sorted(groups.items()):
        words = ["benchbackcompat", "run"]
        for flag, value in [*common, ("--methods", ",".join(methods)), *tail,
                            *(("--set", option) for option in options)]:
            words += [flag, value]
        commands.append(shlex.join(words))
    return commands
