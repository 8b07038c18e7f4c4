"""Plan and execute a run: every (scenario, seed, method) cell, skipping finished ones."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from tqdm.auto import tqdm

from benchbackcompat.config import RunConfig
from benchbackcompat.engine.device import resolve_device
from benchbackcompat.engine.runner import Cell, run_cell
from benchbackcompat.method import Method
from benchbackcompat.plugins import PluginHost
from benchbackcompat.scenarios.data import load_scenario_data
from benchbackcompat.scenarios.steps import build_steps
from benchbackcompat.store import ResultStore

# Training-pool sizes of the built-in datasets, to plan steps without loading images.
DEFAULT_CLASSES = {"embedded": 100, "cifar10": 10, "cifar100": 100, "tinyimagenet": 200, "cifar10-jpeg": 10, "fashion-mnist": 10}


@dataclass
class Plan:
    run: RunConfig
    methods: dict[str, Method]
    cells: list[Cell]

    def describe(self) -> str:
        lines = [f"preset {self.run.preset!r}, seeds {self.run.seeds}, results in {self.run.out}"]
        for named in self.run.scenarios:
            scenario = named.config
            classes = scenario.data.num_classes or DEFAULT_CLASSES.get(scenario.data.name)
            lines.append(f"scenario {named.name} ({scenario.kind}) on {scenario.data.name}, {classes or '?'} classes, "
                         f"protocol {scenario.protocol}, metrics {', '.join(scenario.metrics)}")
            if classes:
                for step in build_steps(scenario, classes):
                    lines.append(f"  step {step.index}: classes [{step.classes[0]}, {step.classes[1]}) x{step.data_fraction:g}, "
                                 f"knows {step.seen_classes}, {step.backbone}, init {step.init}"
                                 + (f" ({step.pretrained.num_classes}-class pretrained)" if step.pretrained else "")
                                 + (", replay" if step.replay else ""))
            for name, method in self.methods.items():
                reason = method.unsupported_reason(scenario)
                if reason:
                    lines.append(f"  {name}: not applicable ({reason})")
        lines.append(f"{len(self.cells)} cells: " + ", ".join(c.label for c in self.cells))
        return "\n".join(lines)


def make_plan(run: RunConfig, host: PluginHost) -> Plan:
    """Validate everything that can be validated before training: methods, hyperparameters, steps."""
    methods = {name: host.create_method(name, run.method_params.get(name, {})) for name in run.methods}
    for named in run.scenarios:
        classes = named.config.data.num_classes or DEFAULT_CLASSES.get(named.config.data.name)
        if classes:
            build_steps(named.config, classes)
    cells = [
        Cell(named, name, methods[name].params.model_dump(mode="json"), seed, run.preset)
        for named in run.scenarios for seed in run.seeds for name in run.methods
    ]
    return Plan(run, methods, cells)


def execute(plan: Plan, host: PluginHost) -> list[dict[str, Any]]:
    """Run every unfinished cell; returns all records (finished ones read back from the store)."""
    run = plan.run
    store = ResultStore(run.out)
    device = resolve_device(run.device)
    plugin_versions = {name: _plugin_version(host, name) for name in run.methods}
    records, data_cache = [], {}
    pending = [c for c in plan.cells if store.record(c.key) is None]
    progress = tqdm(total=len(pending), desc="cells", unit="cell", dynamic_ncols=True, disable=not pending)
    for cell in plan.cells:
        existing = store.record(cell.key)
        if existing is not None:
            records.append(existing)
            continue
        config = cell.scenario.config
        data_key = config.data.model_dump_json() + config.protocol + config.eval_split
        if data_key not in data_cache:
            data_cache[data_key] = load_scenario_data(config, run.cache_dir, device)
        progress.set_postfix_str(cell.label)
        method = type(plan.methods[cell.method])(plan.methods[cell.method].params)  # fresh state per cell
        record = run_cell(cell, method, data_cache[data_key], store, device,
                          observer=host.manager.hook.bbc_on_log, plugin_versions=plugin_versions)
        if record["status"] == "finished":
            host.manager.hook.bbc_on_cell_finished(record=record)
        records.append(record)
        progress.update()
    progress.close()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return records


def _plugin_version(host: PluginHost, name: str) -> str:
    entry = host.entry_points().get(name)
    if entry is None or entry.dist is None:
        return "unknown"
    return f"{entry.dist.name} {entry.dist.version}"
