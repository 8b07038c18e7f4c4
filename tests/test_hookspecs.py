"""Hook specifications: documented, versioned, and compatible with plugins written for older hook sets."""
from __future__ import annotations

import types

import pluggy
import pytest

import benchbackcompat
from benchbackcompat import hookspecs
from benchbackcompat.cli.guide import GUIDE, hook_reference, hookspec_functions, markdown, update
from benchbackcompat.method import Method
from benchbackcompat.execution.plugin_host import GROUP, PluginHost

hookspec = pluggy.HookspecMarker(GROUP)


def test_every_hook_is_documented_and_has_a_version():
    names = [f.__name__ for f in hookspec_functions()]
    assert names == list(hookspecs.HOOKS_SINCE)
    assert all(1 <= v <= hookspecs.HOOKSET_VERSION for v in hookspecs.HOOKS_SINCE.values())
    assert max(hookspecs.HOOKS_SINCE.values()) == hookspecs.HOOKSET_VERSION
    assert all(len(f.__doc__.strip()) > 40 for f in hookspec_functions())


def test_the_committed_guide_matches_the_code():
    text = GUIDE.read_text()
    assert update(text) == text, "docs/writing-a-method.md is stale: run `python -m benchbackcompat.cli.guide`"
    assert hook_reference() in text
    for function in hookspec_functions():
        assert f"### `{function.__name__}(" in text


def test_docstrings_become_markdown():
    assert markdown(":class:`benchbackcompat.method.Method` takes ``name``") == "`benchbackcompat.method.Method` takes `name`"


def _next_hook_set() -> types.ModuleType:
    """A future hook set 2: a new optional hook, and an argument appended to an existing hook."""
    future = types.ModuleType("hookspecs_v2")

    @hookspec
    def bbc_on_log(cell: str, step: int, epoch: int, values: dict, seconds: float) -> None:
        """bbc_on_log with a new argument."""

    @hookspec
    def bbc_on_step_finished(cell: str, step: int, model: object) -> None:
        """A new optional hook."""

    for function in hookspec_functions():
        setattr(future, function.__name__, function)
    future.bbc_on_log = bbc_on_log
    future.bbc_on_step_finished = bbc_on_step_finished
    return future


class OldMethod(Method):
    name = "old-plugin-method"
    description = "registered by a plugin written for hook set 1"


class OldPlugin:
    """A plugin written for hook set 1."""

    def __init__(self) -> None:
        self.logged: list[tuple] = []

    @benchbackcompat.hookimpl
    def bbc_register_methods(self):
        return [OldMethod]

    @benchbackcompat.hookimpl
    def bbc_on_log(self, cell, step, epoch, values):
        self.logged.append((cell, step, epoch, values))


def test_a_plugin_for_an_older_hook_set_keeps_working_when_hooks_are_added():
    manager = pluggy.PluginManager(GROUP)
    manager.add_hookspecs(_next_hook_set())
    host = PluginHost(manager=manager)
    plugin = OldPlugin()
    manager.register(plugin)
    manager.check_pending()
    assert host.methods()["old-plugin-method"] is OldMethod
    manager.hook.bbc_on_log(cell="c", step=1, epoch=2, values={"loss": 0.5}, seconds=3.0)
    assert plugin.logged == [("c", 1, 2, {"loss": 0.5})]  # called with the arguments it names only
    assert manager.hook.bbc_on_step_finished(cell="c", step=1, model=None) == []  # the new hook: nobody implements it


def test_first_party_plugins_load_under_the_next_hook_set():
    import bbc_baselines.l2 as l2

    manager = pluggy.PluginManager(GROUP)
    manager.add_hookspecs(_next_hook_set())
    manager.register(l2)
    manager.check_pending()
    assert "l2" in PluginHost(manager=manager).methods()


class NewPlugin:
    """A plugin that implements a hook newer than this core's hook set."""

    def __init__(self, optional: bool) -> None:
        marker = benchbackcompat.hookimpl(optionalhook=optional)
        self.bbc_on_step_finished = marker(lambda cell, step, model: None)

    @benchbackcompat.hookimpl
    def bbc_register_methods(self):
        return [OldMethod]


def test_a_newer_plugin_runs_on_an_older_core_when_its_new_hook_is_optional():
    host = PluginHost()
    host.manager.register(NewPlugin(optional=True))
    host.manager.check_pending()
    assert "old-plugin-method" in host.methods()
    strict = PluginHost()
    strict.manager.register(NewPlugin(optional=False))
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'bbc_on_step_finished'"):
        strict.manager.check_pending()
