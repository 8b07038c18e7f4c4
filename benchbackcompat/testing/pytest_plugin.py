"""The conformance suite as a pytest plugin (opt-in).

Enable it with ``-p benchbackcompat.testing.pytest_plugin`` (or ``pytest_plugins = [...]`` in a
root ``conftest.py``). It adds:

- ``--bbc-conformance NAMES``: one test item per named method (comma-separated; ``installed`` for
  every method registered in the environment), each running every conformance check, with no
  test file to write: ``pytest -p benchbackcompat.testing.pytest_plugin --bbc-conformance my-method``;
- ``--bbc-conformance-kinds auto|all|KIND,KIND``: which scenario kinds to train (default ``auto``);
- the ``bbc_conformance`` fixture: a session-wide :class:`~benchbackcompat.testing.Conformance`
  (tiny datasets loaded once), e.g. ``bbc_conformance.check("my-method").raise_for_failures()``.

It is deliberately not registered as a ``pytest11`` entry point: that would load it into every
pytest run of every project in an environment where benchbackcompat is installed, adding options
and a fixture they never asked for, and any import problem here would break their test runs.
"""
from __future__ import annotations

from typing import Any

import pytest

_STATE: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("benchbackcompat", "benchbackcompat method conformance")
    group.addoption("--bbc-conformance", default="", metavar="NAMES",
                    help="run the conformance suite on these methods (comma-separated, or 'installed')")
    group.addoption("--bbc-conformance-kinds", default="auto", metavar="KINDS",
                    help="scenario kinds to train: auto (one per family, default), all, or KIND,KIND")


def _kinds(config: pytest.Config) -> Any:
    text = config.getoption("bbc_conformance_kinds")
    return text if text in ("auto", "all") else [k.strip() for k in text.split(",") if k.strip()]


def _conformance():
    from benchbackcompat.testing.conformance import Conformance

    if "conformance" not in _STATE:
        _STATE["conformance"] = Conformance()  # its temporary folder goes with it
    return _STATE["conformance"]


@pytest.fixture(scope="session")
def bbc_conformance():
    """A session-wide Conformance runner (tiny datasets shared between methods)."""
    return _conformance()


class ConformanceItem(pytest.Item):
    """One method's conformance checks."""

    def __init__(self, *, method: str, kinds: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.method, self.kinds = method, kinds

    def runtest(self) -> None:
        _conformance().check(self.method, self.kinds).raise_for_failures()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style=None) -> str:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "benchbackcompat-conformance", None, f"conformance of {self.method}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    names = [n.strip() for n in config.getoption("bbc_conformance").split(",") if n.strip()]
    if names == ["installed"]:
        from benchbackcompat.testing.conformance import installed_methods

        names = installed_methods()
    kinds = _kinds(config)
    items += [ConformanceItem.from_parent(session, name=f"bbc-conformance[{name}]", method=name, kinds=kinds)
              for name in names]


def pytest_unconfigure(config: pytest.Config) -> None:
    _STATE.clear()
