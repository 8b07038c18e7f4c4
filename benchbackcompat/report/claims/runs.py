"""The ``benchbackcompat run`` commands that store a claim's declared run: its deciding scenario with every compared
row at the declared seeds, one command per set of hyperparameters (rows with the methods' own defaults share one),
then the rows that come from another declared table (``b_deciding``) in theirs."""
from __future__ import annotations

import shlex
from typing import Any

from benchbackcompat.overrides import format_override
from benchbackcompat.report.claims.declared import Claim
from benchbackcompat.report.claims.judge import compared_rows


def declared_runs(claim: Claim, preset: str = "") -> list[str]:
    """The commands that run the deciding scenario of ``claim`` with its compared rows at seeds 0 .. seeds-1 and the
    configuration values it names (``deciding_config``), then each other declared table's rows; [] for a claim
    without a deciding scenario."""
    if not claim.deciding:
        return []
    tables: dict[tuple[str, str], tuple[str, dict[str, Any], list[tuple[str, dict[str, Any]]]]] = {}
    for scenario, config, rows in [(claim.deciding, claim.deciding_config, compared_rows(claim)), *(
            (e.b_deciding, e.b_deciding_config, [(e.b, e.b_params)]) for e in claim.compare if e.b_deciding)]:
        entry = tables.setdefault((scenario, repr(sorted(config.items()))), (scenario, config, []))
        entry[2].extend(row for row in rows if row not in entry[2])
    return [command for scenario, config, rows in tables.values()
            for command in _commands(scenario, config, rows, claim.seeds, preset)]


def _commands(scenario: str, config: dict[str, Any], rows: list[tuple[str, dict[str, Any]]], seeds: int,
              preset: str) -> list[str]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for method, params in rows:
        options = tuple(format_override(f"methods.{method}.{key}", value) for key, value in sorted(params.items()))
        groups.setdefault(options, []).append(method)
    common = [("--preset", preset)] if preset else []
    common += [("--scenario", scenario)]
    tail = [("--seeds", f"0-{seeds - 1}")]
    tail += [("--set", format_override(key, value)) for key, value in config.items()]
    commands = []
    for options, methods in sorted(groups.items()):
        words = ["benchbackcompat", "run"]
        for flag, value in [*common, ("--methods", ",".join(dict.fromkeys(methods))), *tail,
                            *(("--set", option) for option in options)]:
            words += [flag, value]
        commands.append(shlex.join(words))
    return commands
