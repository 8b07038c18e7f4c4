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
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from benchbackcompat import hookspecs
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.method import Method

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

    # --- entry points ----------------------------------------------------------------------
    @staticmethod
    def entry_points() -> dict[str, metadata.EntryPoint]:
        return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}

    def load(self, name: str) -> bool:
        """Import and register the entry point ``name``; False (and a recorded failure) if it breaks."""
        if name in self.loaded or name in self.failures:
            return name in self.loaded
        entry = self.entry_points().get(name)
        if entry is None:
            return False
        try:
            plugin = entry.load()
            if not self.manager.is_registered(plugin):
                self.manager.register(plugin, name=f"{GROUP}:{name}")
            self.manager.check_pending()
        except Exception as error:  # a broken plugin must not break the others
            self._unregister(f"{GROUP}:{name}")
            self.failures[name] = PluginFailure(name, f"{type(error).__name__}: {error}".splitlines()[0], traceback.format_exc())
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
            except Exception as error:  # a broken logger must not break the run
                self._unregister(name)
                logging.getLogger(GROUP).warning(
                    f"observer {entry.name!r} disabled: " + f"{type(error).__name__}: {error}".splitlines()[0])
                continue
            registered.append(entry.name)
        return registered

    def _unregister(self, name: str) -> None:
        plugin = self.manager.get_plugin(name)
        if plugin is not None:
            self.manager.unregister(plugin)

    # --- methods ---------------------------------------------------------------------------
    def methods(self) -> dict[str, type[Method]]:
        found: dict[str, type[Method]] = {}
        for result in self.manager.hook.bbc_register_methods():
            for cls in result or []:
                found[cls.name] = cls
        return found

    def method_class(self, name: str) -> type[Method]:
        """The method ``name``: its own entry point first, then every plugin (third-party names may differ)."""
        self.load(name)
        methods = self.methods()
        if name not in methods:
            self.load_all()
            methods = self.methods()
        if name in methods:
            return methods[name]
        if name in self.failures:
            failure = self.failures[name]
            raise BenchError(f"method {name!r} is unavailable: its plugin failed to import ({failure.error})")
        raise UnknownNameError("method", name, set(methods) | set(self.entry_points()))

    def create_method(self, name: str, params: dict[str, Any]) -> Method:
        """Instantiate ``name`` with validated hyperparameters (one-line error on a bad value)."""
        from benchbackcompat.config import validate_model

        cls = self.method_class(name)
        return cls(validate_model(cls.Params, params, f"hyperparameters of method {name!r}"))

    # --- datasets and backbones ------------------------------------------------------------
    def register_extensions(self) -> None:
        """Merge datasets and backbones from plugins into the registries."""
        from benchbackcompat.data.registry import DATASETS
        from benchbackcompat.models.registry import BACKBONES

        for entries in self.manager.hook.bbc_register_datasets():
            DATASETS.update({entry.name: entry for entry in entries or []})
        for entries in self.manager.hook.bbc_register_backbones():
            BACKBONES.update({entry.name: entry for entry in entries or []})


def _new_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(GROUP)
    manager.add_hookspecs(hookspecs)
    return manager
