"""Plugin manager: built-ins first, then entry points of group ``benchbackcompat``, loaded selectively.

Entry points are named after the method they provide, so ``run --methods l2`` imports only the
``l2`` plugin. A plugin that fails to import (or implements hooks that do not exist) is recorded
as unavailable with its error and never breaks the other methods.

Observers (loggers such as TensorBoard) are a second group, ``benchbackcompat.observers``, loaded
all at once for a run by :meth:`PluginHost.load_observers`: they are not named on the command line
and need the run's results directory.
"""
from __future__ import annotations

import importlib.metadata as metadata
import logging
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from benchbackcompat import hookspecs
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.runtime.interrupts import describe, must_propagate
from benchbackcompat.method import Method
from benchbackcompat.runtime.files import outside
from benchbackcompat.store.checkpoint import atomic_write_bytes

GROUP = "benchbackcompat"
OBSERVER_GROUP = "benchbackcompat.observers"


@dataclass
class PluginFailure:
    name: str
    error: str  # one line
    detail: str  # full traceback


@dataclass
class PluginHost:
    """Holds the pluggy manager and what the loaded plugins registered."""

    manager: pluggy.PluginManager = field(default_factory=lambda: _new_manager())
    failures: dict[str, PluginFailure] = field(default_factory=dict)
    loaded: set[str] = field(default_factory=set)
    conflicts: dict[str, str] = field(default_factory=dict)  # method name -> why it is refused (two classes)
    results: Path | None = None  # the run's results directory (observer tracebacks go to <results>/observers/)

    # --- entry points ----------------------------------------------------------------------
    @staticmethod
    def entry_points() -> dict[str, metadata.EntryPoint]:
        """The entry points of group ``benchbackcompat`` by name (the first found where a name has several)."""
        found: dict[str, metadata.EntryPoint] = {}
        for entry in _all_entry_points(GROUP):
            found.setdefault(entry.name, entry)
        return found

    @staticmethod
    def entry_point_conflicts() -> dict[str, str]:
        """Entry-point names that two distributions, or two copies on the path, point at different code: name -> one
        line naming both. Python would pick one by the order of ``sys.path``, silently; such a name is refused."""
        by_name: dict[str, dict[str, metadata.EntryPoint]] = {}
        for entry in _all_entry_points(GROUP):
            by_name.setdefault(entry.name, {}).setdefault(entry.value, entry)
        return {name: f"entry point {name!r} of group {GROUP!r} is registered twice, by "
                      + " and by ".join(_provider(e) for e in list(entries.values())[:2])
                      + "; uninstall one of them, or remove its folder from the Python path"
                for name, entries in by_name.items() if len(entries) > 1}

    def load(self, name: str) -> bool:
        """Import and register the entry point ``name``; False (and a recorded failure) if it breaks, or (a recorded
        conflict) if two distributions register the name with different code."""
        if name in self.loaded or name in self.failures or name in self.conflicts:
            return name in self.loaded
        if (conflict := self.entry_point_conflicts().get(name)) is not None:
            self.conflicts[name] = conflict
            return False
        entry = self.entry_points().get(name)
        if entry is None:
            return False
        try:
            plugin = entry.load()
            if not self.manager.is_registered(plugin):
                self.manager.register(plugin, name=f"{GROUP}:{name}")
            self.manager.check_pending()
        except BaseException as error:  # a broken plugin (even one calling sys.exit) must not break the others
            if must_propagate(error):
                raise
            self._unregister(f"{GROUP}:{name}")
            self.failures[name] = PluginFailure(name, describe(error), traceback.format_exc())
            return False
        self.loaded.add(name)
        return True

    def load_all(self) -> None:
        for name in self.entry_points():
            self.load(name)

    # --- observers -------------------------------------------------------------------------
    @staticmethod
    def observer_entry_points() -> list[metadata.EntryPoint]:
        return sorted(metadata.entry_points(group=OBSERVER_GROUP), key=lambda ep: ep.name)

    def load_observers(self, results: Path) -> list[str]:
        """Register every observer of group ``benchbackcompat.observers``; returns the names registered.

        Such an entry point names a factory ``factory(results_dir) -> plugin | None``: the plugin implements
        ``bbc_on_log`` and/or ``bbc_on_cell_finished``; None means its optional dependency is not installed.
        A broken observer is skipped with a one-line warning and never stops a run.
        """
        registered = []
        self.results = Path(results)
        for entry in self.observer_entry_points():
            name = f"{OBSERVER_GROUP}:{entry.name}"
            if self.manager.has_plugin(name):
                registered.append(entry.name)
                continue
            try:
                plugin = entry.load()(Path(results))
                if plugin is None:
                    continue
                self.manager.register(plugin, name=name)
                self.manager.check_pending()
            except BaseException as error:  # a broken logger must not break the run
                if must_propagate(error):
                    raise
                self._unregister(name)
                logging.getLogger(GROUP).warning(f"observer {entry.name!r} disabled: {describe(error)}")
                continue
            registered.append(entry.name)
        return registered

    def notify(self, hook: str, **kwargs: Any) -> None:
        """Call every implementation of observer hook ``hook`` (``bbc_on_log``, ``bbc_on_cell_finished``) in turn.
        One that raises (anything, even SystemExit) is disabled for the rest of the run with a one-line warning and
        its traceback saved under ``<results>/observers/``; the cell and the other observers carry on."""
        for impl in getattr(self.manager.hook, hook).get_hookimpls():
            try:
                impl.function(*(kwargs[name] for name in impl.argnames))
            except BaseException as error:
                if must_propagate(error):
                    raise
                name = self.manager.get_name(impl.plugin) or impl.plugin_name
                where = self._save_traceback(name)
                self.manager.unregister(impl.plugin)
                logging.getLogger(GROUP).warning(f"observer {name!r} disabled: {hook} raised {describe(error)}"
                                                 + (f"; traceback in {where}" if where else ""))

    def _save_traceback(self, name: str) -> Path | None:
        if self.results is None:
            return None
        path = self.results / "observers" / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".traceback.txt")
        if outside(self.results, path.parent) is not None:  # a planted link: nothing is written through it
            return None
        try:
            atomic_write_bytes(path, traceback.format_exc().encode())
        except OSError:
            return None
        return path

    def _unregister(self, name: str) -> None:
        plugin = self.manager.get_plugin(name)
        if plugin is not None:
            self.manager.unregister(plugin)

    # --- methods ---------------------------------------------------------------------------
    def methods(self) -> dict[str, type[Method]]:
        """Registered methods by name; a name that two classes register goes to ``conflicts`` instead."""
        found: dict[str, type[Method]] = {}
        for result in self.isolated_results("bbc_register_methods"):
            for cls in result or []:
                other = found.setdefault(cls.name, cls)
                if other is not cls:
                    self.conflicts[cls.name] = (
                        f"method {cls.name!r} is registered by two classes: {_origin(other)} and {_origin(cls)}; "
                        "uninstall one of these distributions or rename one of the methods")
        return {name: cls for name, cls in found.items() if name not in self.conflicts}

    def isolated_results(self, hook: str) -> list[Any]:
        """The results of every implementation of registration hook ``hook``; a plugin whose implementation raises
        (anything, even SystemExit) is unregistered and listed as unavailable with its error."""
        results = []
        for impl in reversed(getattr(self.manager.hook, hook).get_hookimpls()):  # pluggy's call order
            try:
                results.append(impl.function())
            except BaseException as error:
                if must_propagate(error):
                    raise
                name = (self.manager.get_name(impl.plugin) or impl.plugin_name).removeprefix(f"{GROUP}:")
                self.failures[name] = PluginFailure(name, f"{hook} raised {describe(error)}", traceback.format_exc())
                self.loaded.discard(name)
                self.manager.unregister(impl.plugin)
        return results

    def check_unique(self, names: list[str]) -> None:
        """Refuse ``names`` if another loaded plugin registers one of them too (an impostor or a clash)."""
        self.methods()
        for name in names:
            if name in self.conflicts:
                raise BenchError(self.conflicts[name])

    def method_class(self, name: str) -> type[Method]:
        """The method ``name``: its own entry point first, then every plugin (third-party names may differ)."""
        self.load(name)
        methods = self.methods()
        if name not in methods and name not in self.conflicts:
            self.load_all()
            methods = self.methods()
        if name in self.conflicts:
            raise BenchError(self.conflicts[name])
        if name in methods:
            return methods[name]
        if name in self.failures:
            failure = self.failures[name]
            raise BenchError(f"method {name!r} is unavailable: its plugin failed to import ({failure.error})")
        entry = self.entry_points().get(name)
        if entry is not None:  # its plugin loaded, but under other names (or none): not a method of that name
            dist = f" (distribution {entry.dist.name} {entry.dist.version})" if entry.dist else ""
            raise BenchError(f"method {name!r}: the plugin of that name{dist} loads but registers no method called "
                             f"{name!r}; known methods: {', '.join(sorted(methods)) or '(none)'}")
        raise UnknownNameError("method", name, set(methods) | set(self.entry_points()))

    def create_method(self, name: str, params: dict[str, Any]) -> Method:
        """Instantiate ``name`` with validated hyperparameters (one-line error on a bad value)."""
        from benchbackcompat.config import validate_model

        cls = self.method_class(name)
        validated = validate_model(cls.Params, params, f"hyperparameters of method {name!r}")
        try:
            return cls(validated)
        except BaseException as error:  # plugin code: a one-line error, not a traceback or an exit
            if must_propagate(error):
                raise
            raise BenchError(f"method {name!r} cannot be created: {describe(error)}") from None

    # --- datasets and backbones ------------------------------------------------------------
    def register_extensions(self) -> None:
        """Merge datasets and backbones from plugins into the registries."""
        from benchbackcompat.data.registry import DATASETS
        from benchbackcompat.models.registry import BACKBONES

        for entries in self.isolated_results("bbc_register_datasets"):
            DATASETS.update({entry.name: entry for entry in entries or []})
        for entries in self.isolated_results("bbc_register_backbones"):
            BACKBONES.update({entry.name: entry for entry in entries or []})


def _all_entry_points(group: str) -> list[metadata.EntryPoint]:
    """Every entry point of ``group`` of every distribution on the path, copies of one distribution on several folders
    of the path included (``metadata.entry_points`` keeps only the first of those)."""
    return [entry for dist in metadata.distributions() for entry in dist.entry_points if entry.group == group]


def _provider(entry: metadata.EntryPoint) -> str:
    """``distribution version (value, in folder)`` of an entry point."""
    dist = entry.dist
    if dist is None:
        return entry.value
    return f"{dist.name} {dist.version} ({entry.value}, in {dist.locate_file('')})"


def _origin(cls: type) -> str:
    """``module.Class`` and the distribution that installed it."""
    from benchbackcompat.identity import distribution_of

    name, version = distribution_of(cls.__module__.split(".")[0])
    return f"{cls.__module__}.{cls.__qualname__} (distribution {name} {version})".replace(" )", ")")


def _new_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(GROUP)
    manager.add_hookspecs(hookspecs)
    return manager
