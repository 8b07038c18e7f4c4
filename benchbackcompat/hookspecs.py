"""Hook specifications of the ``benchbackcompat`` plugin system (hook set version 1).

A plugin is a module or object with functions marked ``@benchbackcompat.hookimpl``, exposed by
an entry point of group ``benchbackcompat``. Registration hooks return lists that the plugin
manager merges; observer hooks are called for every plugin that implements them. New hooks
are only ever added as optional ones, and pluggy lets an implementation take fewer arguments
than its spec, so plugins written for an older hook set keep working.
"""
from __future__ import annotations

from typing import Any

import pluggy

HOOKSET_VERSION = 1
hookspec = pluggy.HookspecMarker("benchbackcompat")


@hookspec
def bbc_register_methods() -> list[type]:
    """Return the :class:`benchbackcompat.method.Method` subclasses this plugin provides."""


@hookspec
def bbc_register_datasets() -> list[Any]:
    """Return :class:`benchbackcompat.data.registry.DatasetEntry` objects for extra datasets."""


@hookspec
def bbc_register_backbones() -> list[Any]:
    """Return :class:`benchbackcompat.models.registry.BackboneEntry` objects for extra backbones."""


@hookspec
def bbc_on_log(cell: str, step: int, epoch: int, values: dict[str, float]) -> None:
    """Observe training curves: called once per epoch with the mean loss terms and the learning rate."""


@hookspec
def bbc_on_cell_finished(record: dict[str, Any]) -> None:
    """Observe a finished cell: ``record`` is what the store wrote (metrics, matrices, timings)."""
