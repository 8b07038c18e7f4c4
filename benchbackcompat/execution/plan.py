"""Plan and execute a run: every (scenario, seed, method) cell, skipping finished ones."""
from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch

from benchbackcompat.execution.request import RunConfig, RunRequest
from benchbackcompat.scenarios.kinds import NamedScenario, ScenarioBase
from benchbackcompat.data.registry import get_dataset
from benchbackcompat.engine import distributed
from benchbackcompat.engine.device import availability_line, resolve_device
from benchbackcompat.cell import Cell, unsupported
from benchbackcompat.store.provenance import device_name, worker_name
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.identity import code_identity
from benchbackcompat.runtime.logs import log, progress_bar
from benchbackcompat.method import Method
from benchbackcompat.models.registry import BACKBONES, TIMM_PREFIX, list_backbones
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import resolve_request
from benchbackcompat.scenarios.data import ScenarioData, load_scenario_data
from benchbackcompat.execution.search import Search, make_search, method_grid
from benchbackcompat.execution.selection import grid_points, grid_size
from benchbackcompat.store import ResultStore
from benchbackcompat.record import CellRecord, FailedRecord, FinishedRecord
from benchbackcompat.execution.watchdog import CellJob, run_watched, timed_out

# Training-pool sizes of the built-in datasets, to plan steps without loading images.
DEFAULT_CLASSES = {"embedded": 100, "cifar10": 10, "cifar100": 100, "tinyimagenet": 200, "cifar10-jpeg": 10, "fashion-mnist": 10}


@dataclass(frozen=True)
class WorkerLink:
    """A ``run --workers`` process's line to the run that started it: ``run`` names that run (a cell that timed
    out in one of its processes is not retried by the others); ``started`` hears each cell this process starts to
    compute and ``finished`` its record (the run names the cell of a worker that dies, and keeps its records)."""

    run: str
    started: Callable[[Cell], None]
    finished: Callable[[CellRecord], None]


@dataclass
class Plan:
    run: RunConfig
    methods: dict[str, Method]
    cells: list[Cell]
    searches: list[Search]  # grids: their selection cells are among ``cells``, their final cells come after
    rerun: frozenset[str] = frozenset()  # methods whose cells are recomputed even if finished (--rerun, --force)
    loaded: dict[str, ScenarioData] = field(default_factory=dict, repr=False)  # scenario data by configuration
    computed_by: set[str] = field(default_factory=set)  # worker names of the processes that computed its cells here

    def final_cells(self, store: ResultStore) -> tuple[list[Cell], list[str]]:
        """The selected settings' cells of every search whose selection is recorded, and a line for each other."""
        cells, waiting = [], []
        for search in self.searches:
            chosen = search.final_cells(store)
            if chosen is None:
                waiting.append(f"{search.scenario.name}/{search.method}: selection cells still missing (other shards?)")
            elif not chosen:
                waiting.append(f"{search.scenario.name}/{search.method}: no grid point finished on the validation split")
            cells += chosen or []
        return cells, waiting

    def describe(self) -> str:
        lines = [f"preset {self.run.preset!r}, seeds {self.run.seeds}, results in {self.run.out}"]
        for named in self.run.scenarios:
            scenario = named.config
            classes = scenario.data.num_classes or DEFAULT_CLASSES.get(scenario.data.name)
            lines.append(f"scenario {named.name} ({scenario.kind}) on {scenario.data.name}, {classes or '?'} classes, "
                         f"protocol {scenario.protocol}, metrics {', '.join(scenario.metrics)}")
            if classes:
                for step in scenario.steps(classes):
                    share = f" ({step.data_fraction:.0%} of their images)" if step.data_fraction < 1 else ""
                    lines.append(f"  step {step.index}: classes [{step.classes[0]}, {step.classes[1]}){share}, "
                                 f"knows {step.seen_classes}, {step.backbone}, init {step.init}"
                                 + (f" ({step.pretrained.num_classes}-class pretrained)" if step.pretrained else "")
                                 + (", replay" if step.replay else ""))
            for name, method in self.methods.items():
                reason = unsupported(method, scenario)
                if reason:
                    lines.append(f"  {name}: not applicable ({reason})")
        for search in self.searches:
            lines.append(f"grid {search.scenario.name}/{search.method}: {len(search.points)} settings of "
                         f"{', '.join(search.grid)} x {len(self.run.seeds)} seeds on a validation split "
                         f"({self.run.selection.validation.fraction:.0%} of each class), rule {search.identity['rule']}, "
                         "then the selected setting")
        lines.append(f"{len(self.cells)} cells: " + ", ".join(c.label for c in self.cells))
        return "\n".join(lines)


def make_plan(run: RunConfig, host: PluginHost) -> Plan:
    """Validate everything that can be validated before training: methods, hyperparameters, dataset and
    backbone names, steps, the device."""
    resolve_device(run.device)
    methods = {name: host.create_method(name, run.method_params.get(name, {})) for name in dict.fromkeys(run.methods)}
    host.check_unique(list(methods))
    codes = {name: code_identity(type(method), within=Method) for name, method in methods.items()}
    host.register_extensions()
    for named in run.scenarios:
        check_names(named.config)
        classes = named.config.data.num_classes or DEFAULT_CLASSES.get(named.config.data.name)
        if classes:
            named.config.steps(classes)
    grids = {name: method_grid(methods[name], run.grids[name]) for name in methods if name in run.grids}
    grids = {name: grid for name, grid in grids.items() if grid_size(grid) > 1}
    check_cell_count(run, [grid_size(grids[name]) if name in grids else 1 for name in methods])
    points = {name: [host.create_method(name, {**run.method_params.get(name, {}), **point}).params.model_dump(mode="json")
                     for point in grid_points(grid)] for name, grid in grids.items()}
    cells, searches = [], []
    for named in run.scenarios:
        for name in methods:
            if name in grids and unsupported(methods[name], named.config) is None:
                searches.append(make_search(run, named, name, grids[name], points[name], codes[name]))
            else:
                cells += [Cell(seeded(named, seed), name, methods[name].params.model_dump(mode="json"), seed, run.preset, codes[name])
                          for seed in dict.fromkeys(run.seeds)]
    return Plan(run, methods, [c for search in searches for c in search.cells] + cells, searches)


def plan_of(request: RunRequest, host: PluginHost | None = None) -> Plan:
    """The plan of ``request``, nothing loaded or trained: ``methods`` "all" made every installed method, the request
    resolved (defaults < preset < (smoke) < its values) and validated, its cells made, the methods to rerun noted and
    its shard taken. ``run``, ``run --dry-run``, ``validate``, ``describe`` and ``tooling.plan_grid`` all plan so."""
    host = host or PluginHost()
    if request.methods == ["all"]:
        host.load_all()
        request = request.model_copy(update={"methods": sorted(host.methods())})
    plan = make_plan(resolve_request(request), host)
    plan.rerun = rerun_methods(list(plan.methods), request.force, request.rerun)
    if request.shard:
        plan.cells = select_shard(plan.cells, request.shard)
    return plan


MAX_CELLS = 100_000  # cells of one plan: each trains models for minutes at least


def check_cell_count(run: RunConfig, points: list[int]) -> None:
    """Refuse, before any cell is made, a plan of more than ``MAX_CELLS`` cells (scenarios x seeds x each method's grid
    points)."""
    count = len(run.scenarios) * len(set(run.seeds)) * sum(points)
    if count > MAX_CELLS:
        raise BenchError(f"the run asks for {count:,} cells ({len(run.scenarios)} scenarios x {len(set(run.seeds))} "
                         f"seeds x {sum(points)} method settings), above the limit of {MAX_CELLS:,}: run fewer")


def seeded(named: NamedScenario, seed: int) -> NamedScenario:
    """The scenario as cells of ``seed`` run it: with ``data.order_by_seed`` its class order is drawn from the seed."""
    data = named.config.data
    if not data.order_by_seed:
        return named
    config = named.config.model_copy(update={"data": data.model_copy(update={"class_order_seed": seed})})
    return named.model_copy(update={"config": config})


def rerun_methods(methods: list[str], force: bool, rerun: list[str]) -> frozenset[str]:
    """The methods to recompute: all of the plan's ``methods`` with ``--force``, else those of ``--rerun`` (which
    must be among them)."""
    unknown = [name for name in rerun if name not in methods]
    if unknown:
        raise BenchError(f"--rerun {','.join(unknown)}: not among --methods ({', '.join(methods)}); "
                         "add it to --methods or drop it from --rerun")
    return frozenset(methods) if force else frozenset(rerun)


def check_names(scenario: ScenarioBase) -> None:
    """Unknown dataset or backbone names fail with the known names (``timm:``/``torchvision:`` names are
    checked by their library)."""
    for name in filter(None, (scenario.data.name, scenario.data.eval_dataset)):
        get_dataset(name)
    for name in scenario.backbone_names():
        if ":" not in name and name not in BACKBONES:
            raise UnknownNameError("backbone", name, [*list_backbones(), f"{TIMM_PREFIX}<model>"])


def run_summary(records: list[CellRecord], seconds: float, out: Path, workers: set[str]) -> tuple[str, int]:
    """The end-of-run summary and the exit code: 1 when any cell failed or diverged, else 0. ``workers``: the
    worker names of this run's processes, whose records count as computed by it."""
    counts = Counter(r.status for r in records)
    lines = [f"{len(records)} cells in {seconds:.1f} s ({', '.join(f'{n} {s}' for s, n in sorted(counts.items()))}); "
             f"results in {out}"]
    for record in records:
        if not isinstance(record, FinishedRecord):
            where = f"; traceback in {record.traceback}" if isinstance(record, FailedRecord) and record.traceback else ""
            lines.append(f"  {record.label}: {record.status} ({record.reason}{where})")
    here = sum(r.worker in workers for r in records)
    lines[0] += f"; {here} computed by this run"
    bad = counts["failed"] + counts["diverged"]
    if counts["failed"]:
        lines.append("failed cells are not recorded: run the same command again to retry them")
    return "\n".join(lines), int(bad > 0)


@dataclass(frozen=True)
class Execution:
    """What computing a plan's cells needs, opened once per :func:`execute`: the store, the plugins (their observers
    loaded), the device, the scenario data loader, the methods' plugin versions, the link to a larger run (a worker)
    and the progress bar (while the pending cells run)."""

    plan: Plan
    host: PluginHost
    store: ResultStore
    device: torch.device
    data_of: Callable[[ScenarioBase], ScenarioData]
    plugin_versions: dict[str, str]
    link: WorkerLink | None = None
    progress: Any = None


def execute(plan: Plan, host: PluginHost, cells: list[Cell] | None = None, link: WorkerLink | None = None) -> list[CellRecord]:
    """Run every unfinished cell of ``cells`` (default: the plan's); returns all records (finished ones read
    back from the store). With ``run.cell_timeout`` each cell runs in a child process that is stopped when the
    time is up (:mod:`benchbackcompat.execution.watchdog`). ``link``: this process is a worker of a larger run.

    Several processes may execute plans on one results directory: a cell that another process is
    running (its lock is held) is put off to the end, then waited for and its record taken, so
    nothing is run twice or lost."""
    cells = plan.cells if cells is None else cells
    execution = open_execution(plan, host, cells, link)
    records, pending = recorded_cells(execution, cells)
    if len(pending) < len(plan.cells):
        log.info(f"{len(plan.cells) - len(pending)} of {len(plan.cells)} cells already finished in {plan.run.out}: skipped")
    with progress_bar(total=len(pending), desc="cells", unit="cell", disable=not pending or not distributed.is_main()) as progress:
        records.update(compute_cells(replace(execution, progress=progress), pending))
    if execution.device.type == "cuda":
        torch.cuda.empty_cache()
    return list({cell.key: records[cell.key] for cell in cells}.values())


def open_execution(plan: Plan, host: PluginHost, cells: list[Cell], link: WorkerLink | None) -> Execution:
    """Open what computing ``cells`` needs: the store (temporaries of killed writes removed), the observers, the
    device, and the cells' data (their fingerprints assigned)."""
    run = plan.run
    store = open_store(run.out, run.lock_timeout)
    if distributed.is_main():
        store.remove_orphan_temporaries()  # from writes that a kill cut short
    host.load_observers(run.out)  # loggers (TensorBoard, ...) of entry point group benchbackcompat.observers
    device = resolve_device(run.device)
    log.info(f"device: {device_name(device)}; {availability_line()}")
    plugin_versions = {name: _plugin_version(host, name) for name in run.methods}
    return Execution(plan, host, store, device, assign_fingerprints(plan, device, cells), plugin_versions, link)


def recorded_cells(execution: Execution, cells: list[Cell]) -> tuple[dict[str, CellRecord], list[Cell]]:
    """The records of the finished cells of ``cells`` (not of methods to rerun), by key, and the cells to compute
    (a duplicate cell once). Each cell's entry is written where missing or stale, so a finished cell's steps can
    still be borrowed under its current training key."""
    plan, store = execution.plan, execution.store
    records, pending = {}, []
    for cell in {cell.key: cell for cell in cells}.values():
        existing = None if cell.method in plan.rerun else store.record(cell.key)
        if existing is None:
            pending.append(cell)
        else:
            records[cell.key] = existing
        if distributed.is_main() and (existing is None or (store.cell_entry(cell.key) or {}).get("training_key") != cell.training_key):
            store.write_cell_entry(cell.key, {"label": cell.label, "method": cell.method, "identity": cell.identity,
                                              "training_key": cell.training_key})
    return records, pending


def compute_cells(execution: Execution, pending: list[Cell]) -> dict[str, CellRecord]:
    """Compute each of ``pending`` under its lock; a cell whose lock another process holds is put off to the end,
    then waited for (and run, if that process died)."""
    plan, store = execution.plan, execution.store
    records, elsewhere = {}, []
    for cell in pending:
        with store.cell_lock(cell.key, blocking=False) as mine:
            if not mine:
                elsewhere.append(cell)
                continue
            if cell.method in plan.rerun and distributed.is_main():
                store.clear_cell(cell.key)
            records[cell.key] = compute_cell(execution, cell)
        execution.progress.update()
    for cell in elsewhere:
        with store.cell_lock(cell.key, label=cell.label):
            records[cell.key] = compute_cell(execution, cell)
        execution.progress.update()
    return records


def compute_cell(execution: Execution, cell: Cell) -> CellRecord:
    """One cell's record (its lock held): the stored one if another process finished it meanwhile (or, in this run,
    timed out), else computed here, in a watched child process with ``run.cell_timeout``."""
    plan, store, link = execution.plan, execution.store, execution.link
    existing = store.record(cell.key)
    if existing is None and link is not None:
        existing = store.timed_out_in(cell.key, link.run)
    if existing is not None:
        return existing
    log.info(f"cell {cell.label} (key {cell.key}): started")
    if link is not None:
        link.started(cell)
    started = time.perf_counter()
    execution.progress.set_postfix_str(cell.label)
    job = CellJob(cell, type(plan.methods[cell.method]), plan.run, execution.plugin_versions,
                  borrow_steps=cell.method not in plan.rerun)
    data = execution.data_of(cell.scenario.config)
    if plan.run.cell_timeout is None:
        record = job.compute(data, store, execution.device, execution.host)
    else:
        record = run_watched(job, plan.run.cell_timeout, store,
                             steps=len(cell.scenario.config.steps(data.num_classes)))
    reason = "" if isinstance(record, FinishedRecord) else f" ({record.reason})"
    log.info(f"cell {cell.label}: {record.status}{reason} in {time.perf_counter() - started:.1f} s")
    plan.computed_by.add(record.worker or worker_name())
    if link is not None:
        if timed_out(record):
            store.note_timeout(cell.key, link.run, record)
        link.finished(record)
    return record


def open_store(out: Path, lock_timeout: float | None) -> ResultStore:
    """The results store of this process (under torchrun: the rank's view, rank 0 reading and writing)."""
    return distributed.RankStore(out, lock_timeout) if distributed.active() else ResultStore(out, lock_timeout)


def assign_fingerprints(plan: Plan, device: torch.device, cells: list[Cell] | None = None) -> Callable[[ScenarioBase], ScenarioData]:
    """Load each scenario's data once per plan and give every cell of ``cells`` (default: the plan's) its data
    fingerprints (parts of its keys); returns the loader (a cell's scenario configuration -> its ScenarioData, on
    ``device``)."""
    def data_of(config: ScenarioBase) -> ScenarioData:
        data_key = config.data.model_dump_json() + config.protocol + config.eval_split
        if data_key not in plan.loaded:
            plan.loaded[data_key] = load_scenario_data(config, plan.run.cache_dir, device)
        return plan.loaded[data_key]

    for cell in plan.cells if cells is None else cells:
        data = data_of(cell.scenario.config)
        cell.data_fingerprint, cell.training_fingerprint = data.fingerprint, data.training_fingerprint
        cell.data_source = data.source_fingerprint
    return data_of


def selected_cells(plan: Plan) -> tuple[list[Cell], list[str]]:
    """Grids: the cells of the settings chosen so far (selection complete in the store), keyed, and a line for each
    search still waiting. Not sharded: with shards or jobs, whichever process finds a selection complete runs
    its cells, each once under its lock."""
    if not plan.searches:
        return [], []
    device = resolve_device(plan.run.device)
    assign_fingerprints(plan, device, [cell for search in plan.searches for cell in search.cells])
    cells, waiting = plan.final_cells(open_store(plan.run.out, plan.run.lock_timeout))
    assign_fingerprints(plan, device, cells)
    return cells, waiting


def select_shard(cells: list[Cell], shard: str) -> list[Cell]:
    """The cells of shard ``i/n`` (0 <= i < n): every n-th cell of the plan starting at i."""
    try:
        index, count = (int(part) for part in shard.split("/"))
    except ValueError:
        raise BenchError(f"--shard {shard!r}: expected I/N with 0 <= I < N, e.g. --shard 0/4") from None
    if not 0 <= index < count:
        raise BenchError(f"--shard {shard!r}: expected I/N with 0 <= I < N, e.g. --shard 0/4")
    return cells[index::count]


def _plugin_version(host: PluginHost, name: str) -> str:
    entry = host.entry_points().get(name)
    if entry is None or entry.dist is None:
        return "unknown"
    return f"{entry.dist.name} {entry.dist.version}"
