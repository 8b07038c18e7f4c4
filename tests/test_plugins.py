"""Plugin discovery through installed entry points: selective, guarded against broken plugins."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.execution.plugin_host import PluginHost


def test_first_party_methods_come_from_installed_entry_points():
    names = set(PluginHost.entry_points())
    assert {"independent", "l2", "er"} <= names
    host = PluginHost()
    assert host.method_class("l2").name == "l2"
    assert host.loaded == {"l2"}  # only the method asked for was loaded


def test_only_requested_plugins_are_imported():
    code = textwrap.dedent("""
        import sys
        from benchbackcompat.execution.plugin_host import PluginHost
        PluginHost().method_class("l2")
        print(sorted(m for m in sys.modules if m.startswith("bbc_baselines.")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['bbc_baselines.l2']"


@pytest.fixture
def broken_plugin(tmp_path, monkeypatch):
    """A real installed distribution (dist-info on sys.path) whose plugin module fails to import,
    next to a working third-party method under an entry point name that differs from the method."""
    (tmp_path / "broken_method.py").write_text("raise ImportError('needs the missing package frobnicate')\n")
    (tmp_path / "nice_method.py").write_text(textwrap.dedent("""
        import benchbackcompat
        from benchbackcompat.method import Method

        class Nice(Method):
            name = "nice"
            description = "a third-party method"

        @benchbackcompat.hookimpl
        def bbc_register_methods():
            return [Nice]
    """))
    dist = tmp_path / "fake_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[benchbackcompat]\nbroken = broken_method\nnice-family = nice_method\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for module in ("broken_method", "nice_method"):
        sys.modules.pop(module, None)


def test_broken_plugin_is_reported_and_does_not_break_others(broken_plugin):
    host = PluginHost()
    with pytest.raises(BenchError, match="'broken' is unavailable: its plugin failed to import .*frobnicate"):
        host.method_class("broken")
    assert host.method_class("l2").name == "l2"
    assert host.method_class("nice").name == "nice"  # found by loading every plugin


def test_list_methods_shows_unavailable_plugins(broken_plugin, capsys):
    from benchbackcompat.cli import main

    assert main(["list", "methods"]) == 0
    out = capsys.readouterr().out
    assert "| broken" in out and "unavailable" in out and "frobnicate" in out
    assert "| l2" in out and "| nice" in out


def test_unknown_method_suggests_a_known_one():
    with pytest.raises(UnknownNameError, match="Did you mean 'independent'"):
        PluginHost().method_class("indepndent")


def test_hyperparameters_are_validated():
    host = PluginHost()
    assert host.create_method("l2", {"weight": 2.5}).params.weight == 2.5
    with pytest.raises(BenchError, match="weight: unknown key|wieght: unknown key"):
        host.create_method("l2", {"wieght": 2.5})
