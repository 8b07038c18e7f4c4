"""Hook specifications of the ``benchbackcompat`` plugin system (hook set version 1).

A plugin is a module or object with functions marked ``@benchbackcompat.hookimpl``, exposed by
an entry point of group ``benchbackcompat``. Registration hooks return lists that the plugin
manager merges; observer hooks are called for every plugin that implements them. Every hook is
optional: a plugin implements the ones it needs.

Versioning: ``HOOKSET_VERSION`` counts hook sets and ``HOOKS_SINCE`` says which set introduced each
hook. A new set only adds optional hooks or appends arguments to existing ones, never removes or
renames; pluggy passes an implementation only the arguments it names, so a plugin written for an
older set keeps working (tests/test_hookspecs.py). A plugin that implements a newer hook can mark
it ``@benchbackcompat.hookimpl(optionalhook=True)`` so that older hosts accept it.
The hook reference of docs/writing-a-method.md is generated from these docstrings.
"""
from __future__ import annotations

from typing import Any

import pluggy

HOOKSET_VERSION = 1
HOOKS_SINCE: dict[str, int] = {
    "bbc_register_methods": 1,
    "bbc_register_datasets": 1,
    "bbc_register_backbones": 1,
    "bbc_on_log": 1,
    "bbc_on_cell_finished": 1,
}
hookspec = pluggy.HookspecMarker("benchbackcompat")
hookimpl = pluggy.HookimplMarker("benchbackcompat")
"""Marker for plugin hook implementations: ``@benchbackcompat.hookimpl``."""


@hookspec
def bbc_register_methods() -> list[type]:
    """Return the :class:`benchbackcompat.method.Method` subclasses this plugin provides.

    The runner looks a method up by its class attribute ``name``; the entry point that exposes the
    plugin should carry the same name, so that ``run --methods NAME`` imports only that plugin.
    """


@hookspec
def bbc_register_datasets() -> list[Any]:
    """Return :class:`benchbackcompat.data.registry.DatasetEntry` objects for extra datasets.

    Each entry's ``load(request)`` returns a ``DatasetBundle``; the dataset is then usable as
    ``data.name`` in a preset or ``--dataset NAME``.
    """


@hookspec
def bbc_register_backbones() -> list[Any]:
    """Return :class:`benchbackcompat.models.registry.BackboneEntry` objects for extra backbones.

    Each entry's ``create(image_size=..., in_chans=..., **kwargs)`` returns a module mapping images
    to pooled features with an integer attribute ``out_dim``; usable as ``model.backbone``.
    """


@hookspec
def bbc_on_log(cell: str, step: int, epoch: int, values: dict[str, float]) -> None:
    """Observe training curves: called once per epoch of every trained model.

    ``cell`` is the cell's label (scenario/method/seedN), ``step`` the model's step, ``epoch`` the
    epoch index; ``values`` holds the epoch's mean loss terms and the learning rate ``lr``.
    """


@hookspec
def bbc_on_cell_finished(record: dict[str, Any]) -> None:
    """Observe a finished cell: ``record`` is what the store wrote (configuration, metrics,
    compatibility matrices, timings) and ``curves``, the per-epoch values that the store keeps in
    ``curves.json.gz``."""
