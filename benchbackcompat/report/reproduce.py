"""How to recompute a leaderboard page, from its records alone: preset files and ``run`` commands.

Each record holds its resolved scenario configuration and the method's hyperparameters, so a page's
cells are recomputed from a preset file written from them (``reproduce/<page>.toml``: one
``[scenarios.<name>]`` table per stored configuration, ``[methods.<name>]`` per method), never from
today's preset files. A page whose records use one scenario name with several configurations, or one
method with several settings, gets one file per combination; each file's commands run exactly its stored
cells (scenarios that were run with other methods or seeds get their own command).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from benchbackcompat.overrides import toml_key, toml_value
from benchbackcompat.record import CellRecord
from benchbackcompat.report.grouping import table_config
from benchbackcompat.report.table_data import Table


@dataclass
class Reproduction:
    """One preset file and the commands that run it: the scenarios, methods and seeds of some of a page's tables."""

    scenarios: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> stored configuration
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> hyperparameters
    seeds: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # (scenario, method) -> its stored seeds

    def accepts(self, record: CellRecord, config: dict[str, Any]) -> bool:
        return (self.scenarios.get(record.scenario, config) == config
                and self.methods.get(record.method, record.params) == record.params)

    def add(self, record: CellRecord, config: dict[str, Any]) -> None:
        self.scenarios[record.scenario] = config
        self.methods[record.method] = record.params
        self.seeds.setdefault((record.scenario, record.method), set()).add(record.seed)

    def preset(self, title: str) -> str:
        """The preset file (TOML) of these scenarios and methods."""
        lines = [f"description = {toml_value(title)}"]
        for kind, tables in (("scenarios", self.scenarios), ("methods", self.methods)):
            for name, values in sorted(tables.items()):
                lines += ["", f"[{kind}.{toml_key(name)}]"]
                lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items() if v is not None]
        return "\n".join(lines) + "\n"

    def commands(self, preset_path: str) -> list[str]:
        """The ``run`` commands that recompute exactly the stored cells (a command runs every method it names on
        every scenario it names, at every seed): methods stored at the same seeds of a scenario share a command, and
        so do scenarios with the same methods and seeds."""
        by_seeds: dict[tuple[str, tuple[int, ...]], list[str]] = {}
        for (scenario, method), seeds in sorted(self.seeds.items()):
            by_seeds.setdefault((scenario, tuple(sorted(seeds))), []).append(method)
        grouped: dict[tuple[tuple[str, ...], tuple[int, ...]], list[str]] = {}
        for (scenario, seeds), methods in by_seeds.items():
            grouped.setdefault((tuple(methods), seeds), []).append(scenario)
        return [shlex.join(["benchbackcompat", "run", "--preset", preset_path, "--scenario", ",".join(scenarios),
                            "--methods", ",".join(methods), "--seeds", ",".join(map(str, seeds))])
                for (methods, seeds), scenarios in grouped.items()]


def reproductions(tables: list[Table]) -> list[Reproduction]:
    """The fewest preset files (greedily) that recompute every record of ``tables``: within one file a scenario name has
    one configuration and a method one setting. Records of a grid's selected setting are run with that setting."""
    found: list[Reproduction] = []
    for table in tables:
        for record in table.records:
            config = table_config(record.config)
            target = next((r for r in found if r.accepts(record, config)), None)
            if target is None:
                target = Reproduction()
                found.append(target)
            target.add(record, config)
    return found

