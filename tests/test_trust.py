"""Results you can trust: cells keyed by code and data identity, --force/--rerun, status, impostor guard.

Runs use a 4-class ImageFolder tree of 8x8 images (about a second per cell).
"""
from __future__ import annotations

import base64
import contextlib
import copy
import hashlib
import importlib.util
import json
import io
import pickle
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError
from benchbackcompat.store import ResultStore
from helpers import install_plugin

RUN = ["--scenario", "multi-step", "--set", "num_models=2", "--set", "data.name=imagefolder", "--set", "eval_split=test",
       "--set", "protocol=loo", "--set", "train.epochs=1", "--set", "train.batch_size=8", "--set", "model.embedding_dim=8",
       "--set", "data.num_classes=4", "--set", "data.train_per_class=8", "--set", "data.test_per_class=4"]


def write_tree(root: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    for split, count in (("train", 8), ("test", 4)):
        for c in range(4):
            folder = root / split / f"c{c}"
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                Image.fromarray((rng.integers(0, 64, (8, 8, 3)) + 60 * c).astype(np.uint8)).save(folder / f"{i}.png")
    return root


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # a private dataset cache
    return write_tree(tmp_path / "tree")


def run(out: Path, root: Path, methods: str, *extra: str) -> tuple[int, str, int]:
    """Exit code, stderr and the number of records written by this run."""
    before = records_bytes(out)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", "--out", str(out), "--data-root", str(root), "--methods", methods, *RUN, *extra])
    after = records_bytes(out)
    return code, err.getvalue(), sum(before.get(path) != data for path, data in after.items())


def records_bytes(out: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in out.glob("cells/*/record.json.gz")}


def computed(result: tuple[int, str, int]) -> int:
    assert result[0] == 0, result[1]
    return result[2]


MINE = """
    import benchbackcompat
    from bbc_baselines.l2 import L2

    class Mine(L2):
        name = "mine"
        description = "l2 under another name"

    @benchbackcompat.hookimpl
    def bbc_register_methods():
        return [Mine]
"""


@pytest.mark.slow
def test_changing_a_methods_code_recomputes_its_cell_and_status_calls_the_old_one_stale(tree, tmp_path, monkeypatch,
                                                                                        capsys):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    install_plugin(plugins, "mine", MINE)
    monkeypatch.syspath_prepend(str(plugins))
    out = tmp_path / "run"
    assert computed(run(out, tree, "mine")) == 1
    assert computed(run(out, tree, "mine")) == 0
    (plugins / "mine.py").write_text((plugins / "mine.py").read_text() + "\n# a comment is not code\n")
    sys.modules.pop("mine", None)
    assert computed(run(out, tree, "mine")) == 0  # the same code: the cell stays valid
    (plugins / "mine.py").write_text((plugins / "mine.py").read_text() + "\nWEIGHT = 2  # a code change, same version\n")
    sys.modules.pop("mine", None)
    assert computed(run(out, tree, "mine")) == 1  # new code, new key: recomputed, not reused
    assert main(["status", "--results", str(out)]) == 0
    table = capsys.readouterr().out
    assert "1 finished, 1 stale" in table and "method source_sha256 changed" in table
    records = list(ResultStore(out).records())
    assert len({r.identity["code"]["source_sha256"] for r in records}) == 2
    assert all("mine-plugin 1.0" in r.identity["code"]["distribution"] and "commit" in r.versions.model_fields_set for r in records)
    sys.modules.pop("mine", None)


@pytest.mark.slow
def test_a_method_packages_tests_are_not_its_code(tmp_path, monkeypatch):
    from benchbackcompat.identity import source_hash

    package = tmp_path / "bbc_tested"
    (package / "tests").mkdir(parents=True)
    (package / "__init__.py").write_text("WEIGHT = 1\n")
    spec = importlib.util.spec_from_file_location("bbc_tested", package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    monkeypatch.setitem(sys.modules, "bbc_tested", importlib.util.module_from_spec(spec))
    before = source_hash(["bbc_tested"])
    (package / "tests" / "test_weight.py").write_text("def test_weight():\n    assert True\n")
    assert source_hash(["bbc_tested"]) == before  # a test beside the method does not make its records stale
    (package / "__init__.py").write_text('"""A docstring."""\n\nWEIGHT = 1  # a comment\n')
    assert source_hash(["bbc_tested"]) == before  # nor do its comments, docstrings and blank lines
    (package / "__init__.py").write_text("WEIGHT = 2\n")
    assert source_hash(["bbc_tested"]) != before  # its code does


def test_same_data_through_two_paths_is_one_cell_and_new_images_another(tree, tmp_path):
    out = tmp_path / "run"
    link = tmp_path / "link"
    link.symlink_to(tree)
    assert computed(run(out, tree, "independent")) == 1
    assert computed(run(out, link, "independent")) == 0  # a symlink: same content, same cell
    assert computed(run(out, Path(str(tree) + "/../tree"), "independent")) == 0
    write_tree(tree, seed=1)  # other images behind the same path
    assert computed(run(out, tree, "independent")) == 1
    fingerprints = {r.identity["data_sha256"] for r in ResultStore(out).records()}
    assert len(fingerprints) == 2


@pytest.mark.slow
def test_force_and_rerun_recompute_finished_cells(tree, tmp_path):
    out = tmp_path / "run"
    assert computed(run(out, tree, "independent,l2")) == 2
    assert computed(run(out, tree, "independent,l2", "--rerun", "l2")) == 1
    assert computed(run(out, tree, "independent,l2", "--force")) == 2
    code, log, _ = run(out, tree, "independent", "--rerun", "l2")
    assert code == 2 and "--rerun l2: not among --methods" in log


@pytest.mark.slow
def test_duplicate_cells_run_and_count_once(tree, tmp_path, capsys):
    out = tmp_path / "run"
    code, log, written = run(out, tree, "independent,independent", "--seeds", "0,0")
    assert code == 0 and "\n1 cells in" in log and written == 1


def test_status_lists_finished_partial_failed_and_pending_cells(tmp_path, capsys):
    store = ResultStore(tmp_path)
    store.write_record("a" * 16, {"key": "a" * 16, "label": "s/m/seed0", "scenario": "s", "kind": "ext-class", "seed": 0,
                                  "method": "independent", "status": "finished", "identity": {"results_version": 0}})
    store.write_cell_entry("b" * 16, {"label": "s/m/seed1"})
    store.save(store.step_path("b" * 16, 0), {"x": 1})
    store.write_cell_entry("c" * 16, {"label": "s/m/seed2"})
    (store.cell_dir("c" * 16) / "traceback.txt").write_text("boom")
    store.write_cell_entry("d" * 16, {"label": "s/m/seed3"})
    assert main(["status", "--results", str(tmp_path)]) == 0
    lines = {line.split("|")[2].strip(): line for line in capsys.readouterr().out.splitlines() if "seed" in line}
    assert "stale" in lines["s/m/seed0"] and "core results version 0" in lines["s/m/seed0"]
    assert "partial" in lines["s/m/seed1"] and "steps saved: 0" in lines["s/m/seed1"]
    assert "failed" in lines["s/m/seed2"] and "pending" in lines["s/m/seed3"]


def test_status_prints_its_summary_first_caps_the_list_and_filters(tmp_path, capsys, monkeypatch):
    import benchbackcompat.cli.stored as cli

    store = ResultStore(tmp_path)
    for scenario in ("s", "t"):
        for method in ("a", "b"):
            for seed in range(3):
                store.write_cell_entry(f"{scenario}{method}{seed}".ljust(16, "0"), {"label": f"{scenario}/{method}/seed{seed}"})
    monkeypatch.setattr(cli, "STATUS_ROWS", 5)
    assert main(["status", "--results", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "12 cells: 12 pending"  # the summary first
    assert sum("/seed" in line for line in lines) == 5 and lines[-1] == "(7 more cells: --all lists every cell)"
    assert main(["status", "--results", str(tmp_path), "--all"]) == 0
    assert sum("/seed" in line for line in capsys.readouterr().out.splitlines()) == 12
    assert main(["status", "--results", str(tmp_path), "--scenario", "t", "--methods", "b"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 cells of scenario t, method b: 3 pending\n")
    assert {line.split("|")[2].strip() for line in out.splitlines() if "/seed" in line} == {f"t/b/seed{i}" for i in range(3)}


def test_status_prices_the_cells_left_at_their_scenarios_mean_recorded_time():
    from benchbackcompat.results.status import cost_by_scenario

    def row(label, state, seconds=None):
        return {"cell": label, "state": state, "seconds": seconds}

    rows = [row("s/a/seed0", "finished", 600.0), row("s/b/seed0", "finished", 1200.0), row("s/c/seed0", "not-applicable"),
            row("s/d/seed0", "pending"), row("s/e/seed0", "partial"), row("t/a/seed0", "pending")]
    # s: (600 + 1200) s = 0.5 h over 2 cells, 15 min each; 2 left at 15 min = 0.5 h; t: nothing timed yet
    assert cost_by_scenario(rows) == [["s", 2, 0.5, 15.0, 2, 0.5], ["t", 0, 0.0, "?", 1, "?"]]


def test_a_record_copied_into_another_cells_folder_is_not_served(tmp_path, caplog):
    store = ResultStore(tmp_path)
    store.write_record("a" * 16, {"key": "a" * 16, "label": "s/m/seed0", "scenario": "s", "kind": "ext-class",
                                  "method": "m", "seed": 0, "status": "finished"})
    (store.cell_dir("b" * 16)).mkdir(parents=True)
    (store.cell_dir("b" * 16) / "record.json.gz").write_bytes(store.record_path("a" * 16).read_bytes())
    assert store.record("b" * 16) is None and "belongs to cell" in caplog.text
    assert store.record("a" * 16) is not None


IMPOSTOR = """
    import benchbackcompat
    from bbc_baselines.independent import Independent

    class Dup(Independent):
        name = "dup"

    class FakeL2(Independent):
        name = "l2"

    @benchbackcompat.hookimpl
    def bbc_register_methods():
        return [Dup, FakeL2]
"""


@pytest.mark.parametrize("methods", ["dup,l2", "l2,dup"])
def test_a_method_name_registered_twice_is_an_error_naming_both_distributions(methods, tmp_path, monkeypatch, capsys):
    install_plugin(tmp_path, "dup", IMPOSTOR, dist="evil-plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["run", "--out", str(tmp_path / "run"), "--scenario", "both", "--methods", methods, "--dry-run"]) == 2
        message = capsys.readouterr().err
        assert "'l2' is registered by two classes" in message and "evil-plugin 1.0" in message
        assert "bbc_baselines.l2.L2 (distribution benchbackcompat" in message and message.count("\n") == 1
        assert main(["list", "methods"]) == 2
        captured = capsys.readouterr()
        assert "| l2 " in captured.out and "conflict" in captured.out and "evil-plugin" in captured.err
    finally:
        sys.modules.pop("dup", None)


# --- divergence after the last update, or at evaluation ------------------------------------------------------------

@pytest.mark.slow
def test_weights_that_diverge_in_the_last_update_of_an_epoch_record_the_cell_as_diverged(tree, tmp_path):
    out = tmp_path / "run"  # step 0: 16 images, one batch per epoch, so no later loss would show the NaN
    code, log, written = run(out, tree, "independent", "--set", "train.lr=inf", "--set", "train.batch_size=16")
    assert code == 1 and written == 1
    (record,) = ResultStore(out).records()
    assert record.status == "diverged" and record.step == 0 and record.epoch == 0
    assert record.reason.startswith("weights (") and "diverged (NaN/Inf) at step 0, epoch 0" in record.reason


NAN_FEATURES = """
    import benchbackcompat
    from bbc_baselines.independent import Independent

    class NanFeatures(Independent):
        name = "nanfeat"

        def features(self, model, images):
            features = super().features(model, images)
            return features if model.training else features * float("nan")  # NaN at evaluation only

    @benchbackcompat.hookimpl
    def bbc_register_methods():
        return [NanFeatures]
"""


@pytest.mark.slow
def test_non_finite_features_at_evaluation_record_the_cell_as_diverged(tree, tmp_path, monkeypatch):
    install_plugin(tmp_path, "nanfeat", NAN_FEATURES, dist="nan-plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code, log, written = run(tmp_path / "run", tree, "nanfeat")
    finally:
        sys.modules.pop("nanfeat", None)
    assert code == 1 and written == 1
    (record,) = ResultStore(tmp_path / "run").records()
    assert record.status == "diverged" and record.reason.startswith("evaluation features of model 0 diverged")


# --- the dataset cache is checked ----------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["flip", "random", "no-checksum", "truncate"])
def test_a_damaged_dataset_cache_is_rebuilt_with_one_warning(damage, tmp_path, caplog):
    from benchbackcompat.data import DatasetRequest, load_dataset

    root = write_tree(tmp_path / "tree")
    request = DatasetRequest(cache_dir=tmp_path / "cache", root=root)
    first = load_dataset("imagefolder", request)
    (path,) = (tmp_path / "cache").glob("*.pt")
    data = bytearray(path.read_bytes())
    if damage == "flip":  # a few bytes inside the image arrays: torch.load would still succeed
        for i in range(len(data) - 2000, len(data) - 1000, 97):
            data[i] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "random":
        path.write_bytes(np.random.default_rng(0).bytes(len(data)))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        Path(str(path) + ".sha256").unlink()
    caplog.clear()
    again = load_dataset("imagefolder", request)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(f"dataset cache {path}:") and "rebuilding" in warnings[0]
    assert "\n" not in warnings[0]
    assert all(bool((first.splits[s].images == again.splits[s].images).all()) for s in first.splits)
    caplog.clear()
    load_dataset("imagefolder", request)  # rebuilt with a fresh checksum: no warning now
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


# --- plugin and observer code cannot take the run down -------------------------------------------------------------

ROGUE = """
    import os, signal, sys
    import benchbackcompat
    from bbc_baselines.l2 import L2

    class Exits(L2):
        name = "exits"

        def loss(self, model, batch, ctx):
            sys.exit(0)

    class Interrupts(L2):
        name = "interrupts"

        def loss(self, model, batch, ctx):
            raise KeyboardInterrupt("raised by the plugin, not by a user")

    class RealCtrlC(L2):
        name = "ctrl-c"

        def loss(self, model, batch, ctx):
            os.kill(os.getpid(), signal.SIGINT)  # what pressing Ctrl-C does
            return super().loss(model, batch, ctx)

    class BadCheck(L2):
        name = "badcheck"

        def unsupported_reason(self, scenario):
            raise SystemExit("support check exits")

    @benchbackcompat.hookimpl
    def bbc_register_methods():
        return [Exits, Interrupts, RealCtrlC, BadCheck]
"""

OBSERVERS = """
    import sys
    import benchbackcompat

    class Rogue:
        @benchbackcompat.hookimpl
        def bbc_on_log(self, cell, step, epoch, values):
            raise SystemExit(3)

        @benchbackcompat.hookimpl
        def bbc_on_cell_finished(self, record):
            raise KeyboardInterrupt("observer")

    class Counter:
        finished = []

        @benchbackcompat.hookimpl
        def bbc_on_cell_finished(self, record):
            Counter.finished.append(record["label"])

    def rogue(results):
        return Rogue()

    def counter(results):
        return Counter()
"""


@pytest.fixture
def rogue(tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    install_plugin(plugins, "rogue", ROGUE, dist="rogue-plugin")
    entry_points = plugins / "rogue_plugin-1.0.dist-info" / "entry_points.txt"
    entry_points.write_text("[benchbackcompat]\n" + "".join(f"{n} = rogue\n" for n in
                                                            ("exits", "interrupts", "ctrl-c", "badcheck")))
    monkeypatch.syspath_prepend(str(plugins))
    yield plugins
    for name in ("rogue", "rogue_observers"):
        sys.modules.pop(name, None)


@pytest.mark.slow
def test_sys_exit_and_keyboard_interrupt_from_a_plugin_fail_only_its_cell(rogue, tree, tmp_path):
    out = tmp_path / "run"
    code, log, written = run(out, tree, "exits,interrupts,independent")
    assert code == 1 and written == 1  # independent finished; the two failed cells are not recorded
    assert "multi-step/exits/seed0: failed (SystemExit: 0; traceback in" in log
    assert "multi-step/interrupts/seed0: failed (KeyboardInterrupt: raised by the plugin, not by a user" in log
    assert len(list(out.glob("cells/*/traceback.txt"))) == 2


@pytest.mark.slow
def test_a_real_ctrl_c_still_stops_the_run_cleanly(rogue, tree, tmp_path):
    code, log, written = run(tmp_path / "run", tree, "ctrl-c,independent")
    assert code == 130 and "interrupted: finished steps are saved" in log and written == 0


def test_a_support_check_that_raises_marks_the_method_unavailable(rogue, tree, tmp_path, capsys):
    argv = ["run", "--out", str(tmp_path / "run"), "--scenario", "both", "--methods", "badcheck", "--dry-run"]
    assert main(argv) == 0
    assert "badcheck: not applicable (unavailable: its support check raised SystemExit: support check exits)" in \
        capsys.readouterr().out
    code, log, written = run(tmp_path / "run", tree, "badcheck")
    (record,) = ResultStore(tmp_path / "run").records()
    assert code == 0 and record.status == "not-applicable" and "support check raised" in record.reason


@pytest.mark.slow
def test_an_observer_that_raises_is_disabled_and_the_cells_finish(rogue, tree, tmp_path, caplog):
    (rogue / "rogue_observers.py").write_text(textwrap.dedent(OBSERVERS))
    info = rogue / "rogue_plugin-1.0.dist-info" / "entry_points.txt"
    info.write_text(info.read_text() + "[benchbackcompat.observers]\na-rogue = rogue_observers:rogue\n"
                    "b-counter = rogue_observers:counter\n")
    out = tmp_path / "run"
    code, log, written = run(out, tree, "independent,l2")
    assert code == 0 and written == 2
    import rogue_observers

    assert rogue_observers.Counter.finished == ["multi-step/independent/seed0", "multi-step/l2/seed0"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "observer" in r.getMessage()]
    assert len(warnings) == 1 and "bbc_on_log raised SystemExit: 3" in warnings[0]
    assert "SystemExit" in next(out.glob("observers/*.traceback.txt")).read_text()


@pytest.mark.parametrize("when", ["import", "registration"])
def test_a_plugin_calling_sys_exit_is_listed_unavailable(when, tmp_path, monkeypatch, capsys):
    body = "import sys\nsys.exit(3)\n" if when == "import" else (
        "import sys, benchbackcompat\n\n@benchbackcompat.hookimpl\ndef bbc_register_methods():\n    sys.exit(3)\n")
    install_plugin(tmp_path, "quitter", body, dist="quitter-plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["list", "methods"]) == 0
    finally:
        sys.modules.pop("quitter", None)
    out = capsys.readouterr().out
    assert "| quitter" in out and "SystemExit: 3" in out and "| l2 " in out


def test_leaderboard_keeps_the_newest_record_of_a_cell_and_ignores_the_data_path(tmp_path, capsys):
    import copy

    fixture = Path(__file__).parent / "fixtures" / "leaderboard_records.json"
    old = next(r for r in json.loads(fixture.read_text()) if r["status"] == "finished")
    old = {**old, "computed_at": "2026-01-01T00:00:00+00:00"}
    old["config"]["data"]["root"] = "../shared/data"
    new = copy.deepcopy(old)  # recomputed after a code change: another key, the same cell for a reader
    new.update(key="f" * 16, computed_at="2026-02-01T00:00:00+00:00")
    new["config"]["data"]["root"] = "/abs/path/to/shared/data"
    metric = next(iter(new["metrics"]))
    new["matrices"][metric][1][1] = 12.5  # C = [[30, -], [10, 12.5]], reference self 40: the summaries by hand
    new["metrics"][metric].update(self=12.5, AA=(30 + 10 + 12.5) / 3, AC=0.0, ACA=0.0, p_up=(12.5 - 40) / 40)
    store = ResultStore(tmp_path)
    for record in (old, new):
        store.write_record(record["key"], record)
    assert main(["leaderboard", "--results", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    row = next(line for line in captured.out.splitlines() if line.startswith(f"| {old['method']} "))
    assert row.rstrip("| ").endswith("1") and "(root=" not in captured.out  # one seed, one table (no path variant)
    header = next(line for line in captured.out.splitlines() if line.startswith("| method "))
    cells = dict(zip([c.strip() for c in header.strip("|").split("|")], [c.strip() for c in row.strip("|").split("|")]))
    assert cells[f"self ({metric})"] == "12.50"  # the newest record's self-test
    assert "1 older records of the same cells" in captured.err
    assert main(["leaderboard", "--results", str(tmp_path), "--out", str(tmp_path / "board")]) == 0
    index = (tmp_path / "board" / "README.md").read_text()  # the published index says so too
    assert f"1 older records of the same cells (computed by other code or on other data: {old['scenario']}) are left out" in index


def test_code_text_drops_comments_docstrings_and_layout_only():
    from benchbackcompat.identity import code_text

    source = ('"""Module doc."""\nimport os  # why\n\n\nclass A:\n    """Doc\n    on two lines."""\n\n'
              '    w = 1   \n    s = "a value, not a doc"\n    def f(self):\n        \'doc\'\n'
              '        return f"{self.w} {os.sep}"  # trailing\n')
    assert code_text(source) == ('import os\nclass A:\n    w = 1\n    s = "a value, not a doc"\n    def f(self):\n'
                                 '        return f"{self.w} {os.sep}"\n')
    assert code_text(source.replace("w = 1", "w = 2")) != code_text(source)


# --- a record with a valid checksum is still checked against itself ------------------------------------------------

FIXTURE_RECORDS = Path(__file__).parent / "fixtures" / "leaderboard_records.json"


def fixture_records() -> dict[str, dict]:
    return {r["label"]: r for r in json.loads(FIXTURE_RECORDS.read_text())}


def hits(*bits: int) -> dict:
    """Per-query hits as a record stores them (packed eight to a byte, most significant bit first), by hand."""
    packed = bytes(int("".join(map(str, bits[i:i + 8])).ljust(8, "0"), 2) for i in range(0, len(bits), 8))
    return {"encoding": "bits", "n": len(bits), "data": base64.b64encode(packed).decode()}


def consistent() -> dict:
    """An ext-class record whose every summary and per-query outcome agrees with its matrix, by hand: 4 queries."""
    record = copy.deepcopy(fixture_records()["ext-class/l2/seed0"])
    record["matrices"]["cmc@1"] = [[25.0, None], [50.0, 75.0]]  # 1, 2 and 3 hits of 4
    record["metrics"]["cmc@1"] = {"AA": 50.0, "AC": 1.0, "ACA": 50.0, "self": 75.0, "cross": 50.0, "old_self": 25.0,
                                  "reference_self": 100.0, "p_com": (50 - 25) / (100 - 25), "p_up": (75 - 100) / 100,
                                  "update_gain": (50 - 25) / (100 - 25), "AA_curve": [25.0, 50.0], "AC_curve": [None, 1.0]}
    record["outcomes"] = {"cmc@1": {"C": [[hits(1, 0, 0, 0), None], [hits(1, 0, 1, 0), hits(1, 1, 1, 0)]],
                                    "reference_self": hits(1, 1, 1, 1)}}
    return record


def forged(damage: str) -> dict:
    """A fixture record (with a fresh, valid checksum once stored) damaged by ``damage``."""
    records = fixture_records()
    multi, single = records["multi-step/independent/seed0"], records["ext-class/l2/seed0"]
    record = copy.deepcopy(single if damage in ("p_com", "kind-size", "chance") else multi)
    if damage in ("outcomes", "reference"):
        record = consistent()
    C = record["matrices"]["cmc@1"]
    if damage == "ragged":  # C = [[50], [20, 60], [25, 30, 70]]: row 1 loses an entry
        C[1] = [20.0]
    elif damage == "upper":
        C[0][2] = 55.0
    elif damage == "range":
        C[2][1] = 130.0
    elif damage == "steps":
        record["steps"] = record["steps"][:2]
    elif damage == "curve":
        record["metrics"]["cmc@1"]["AA_curve"] = [50.0, 43.3]
    elif damage == "chance":
        record["chance"] = {"cmc@1": -4.0}
    elif damage == "AA":  # the matrix gives (50 + 20 + 60 + 25 + 30 + 70) / 6 = 42.5
        record["metrics"]["cmc@1"]["AA"] = 99.9
    elif damage == "AC":  # no pair is compatible: 20 < 50, 25 < 50, 30 < 60
        record["metrics"]["cmc@1"]["AC"] = 1.0
    elif damage == "p_com":  # C = [[30, -], [33, 38]], reference self 40: (33 - 30) / (40 - 30) = 0.3
        record["metrics"]["cmc@1"]["p_com"] = 0.9
    elif damage == "kind-size":  # an ext-class record is one update: 2 x 2 (its steps forged along)
        record["matrices"]["cmc@1"] = [[30.0, None, None], [33.0, 38.0, None], [31.0, 32.0, 39.0]]
        record["steps"] = [*record["steps"], record["steps"][-1]]
        record["metrics"]["cmc@1"] = {"AA": (30 + 33 + 38 + 31 + 32 + 39) / 6}
    elif damage == "outcomes":  # C[1][0] = 50 (2 of 4) forged over outcomes of 3 hits of 4
        record["outcomes"]["cmc@1"]["C"][1][0] = hits(1, 1, 1, 0)
    elif damage == "reference":  # the reference self-test's outcomes: 2 hits of 4, not the stored 100
        record["outcomes"]["cmc@1"]["reference_self"] = hits(0, 1, 1, 0)
    return record


FORGERIES = {  # damage -> the one warning line's field and reason
    "ragged": "matrices: cmc@1 row 1 has 1 entries; a matrix of 3 models is 3 x 3",
    "upper": "matrices: cmc@1[0][2] = 55.0: only the lower triangle",
    "range": "matrices: cmc@1[2][1] = 130.0 is outside [0, 100]",
    "steps": "the record's models disagree in number (matrices.cmc@1: 3, steps: 2",
    "curve": "the record's models disagree in number",
    "chance": "chance: cmc@1 = -4.0 is outside [0, 100]",
    "AA": "metrics.cmc@1.AA is 99.9 but its matrix gives 42.5",
    "AC": "metrics.cmc@1.AC is 1 but its matrix gives 0",
    "p_com": "metrics.cmc@1.p_com is 0.9 but its matrix gives 0.3",
    "kind-size": "matrices.cmc@1: a ext-class record holds one update (2 x 2), not 3 x 3",
    "outcomes": "matrices.cmc@1[1][0] is 50 but its per-query outcomes give 75",
    "reference": "metrics.cmc@1.reference_self is 100 but its per-query outcomes give 50",
}


@pytest.mark.parametrize("damage", list(FORGERIES))
def test_a_record_that_contradicts_itself_is_skipped_with_one_warning_naming_the_field(damage, tmp_path, caplog, capsys):
    results = tmp_path / "results"
    store = ResultStore(results)
    for record in fixture_records().values():
        store.write_record(record["key"], record)
    bad = forged(damage)
    path = store.write_record(bad["key"], bad)  # a valid checksum: only the content is wrong
    assert main(["leaderboard", "--results", str(results), "--out", str(tmp_path / "board")]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "\n" not in warnings[0] and FORGERIES[damage] in warnings[0], warnings
    assert str(path) in warnings[0] or f"in {results} (cell {bad['key']!r})" in warnings[0]
    page = (tmp_path / "board" / "embedded-quick.md").read_text()
    assert "99.90" not in page and "multi-step" in page and "ext-class" in page
    if damage == "AA":  # the forged seed is left out: AA of seed 1 alone, (52 + 22 + 58 + 24 + 28 + 66) / 6
        assert "| 41.67" in page


def test_records_that_hold_together_are_kept_outcomes_and_all(tmp_path):
    store = ResultStore(tmp_path)
    record = consistent()
    store.write_record(record["key"], record)
    assert store.record(record["key"]).metrics["cmc@1"].p_com == pytest.approx(1 / 3)


class _Touch:
    """A pickle that creates a marker file when unpickled (what a planted weights file could do)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.fixture
def hub(tmp_path):
    """An empty torch hub cache: its checkpoints folder."""
    import torch

    previous = torch.hub.get_dir()
    torch.hub.set_dir(str(tmp_path / "hub"))
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    yield tmp_path / "hub" / "checkpoints"
    torch.hub.set_dir(previous)


def _named_by_hash(folder: Path, stem: str, data: bytes) -> Path:
    path = folder / f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}.pth"
    path.write_bytes(data)
    return path


def _zoo(name: str):
    from benchbackcompat.models.zoo import create_zoo_model

    return create_zoo_model(name, num_classes=1000, image_size=32, in_chans=3, pretrained=True, data_stats=((0.5,) * 3, (0.5,) * 3))


def test_a_pickle_planted_as_torchvision_weights_runs_no_code_and_the_error_names_the_file(hub, tmp_path):
    marker = tmp_path / "ran"
    planted = hub / "resnet18-f37072fd.pth"  # torchvision's file name for resnet18's published weights
    planted.write_bytes(pickle.dumps({"fc.weight": _Touch(marker)}))
    with pytest.raises(BenchError) as error:
        _zoo("torchvision:resnet18")
    assert not marker.exists()
    assert "\n" not in str(error.value) and str(planted) in str(error.value) and "f37072fd" in str(error.value)


def test_a_planted_pickle_whose_name_hash_matches_still_runs_no_code(hub, tmp_path, monkeypatch):
    import torchvision.models as tvm

    marker = tmp_path / "ran"
    planted = _named_by_hash(hub, "shufflenetv2_x0.5", pickle.dumps({"fc.weight": _Touch(marker)}))
    monkeypatch.setattr(tvm.ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1.value, "url", f"https://download.pytorch.org/models/{planted.name}")
    with pytest.raises(BenchError) as error:
        _zoo("torchvision:shufflenet_v2_x0_5")
    assert not marker.exists()
    assert "\n" not in str(error.value) and str(planted) in str(error.value) and "not a plain state dict" in str(error.value)


def test_published_weights_whose_name_hash_matches_load_into_the_zoo_model(hub, monkeypatch):
    import torch
    import torchvision.models as tvm

    torch.manual_seed(0)
    state = tvm.shufflenet_v2_x0_5().state_dict()
    buffer = io.BytesIO()
    torch.save(state, buffer)
    path = _named_by_hash(hub, "shufflenetv2_x0.5", buffer.getvalue())
    monkeypatch.setattr(tvm.ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1.value, "url", f"https://download.pytorch.org/models/{path.name}")
    model = _zoo("torchvision:shufflenet_v2_x0_5")
    assert torch.equal(model.head.weight, state["fc.weight"])  # the classifier: the file's, not a random one
    backbone = dict(model.backbone.named_parameters())
    assert torch.equal(next(v for k, v in backbone.items() if k.endswith("conv1.0.weight")), state["conv1.0.weight"])


def test_an_answer_is_asked_again_when_a_helper_it_imported_changes_keeping_size_and_time(tmp_path, monkeypatch):
    """An edit copied with ``rsync -t`` or ``cp -p`` keeps the size and modification time: the content decides."""
    import importlib
    import os

    from benchbackcompat.cli.answer_cache import cached_answer

    helper = tmp_path / "code" / "bbc_test_helper_notes.py"
    helper.parent.mkdir()
    helper.write_text('NOTE = "weight one"\n')
    monkeypatch.syspath_prepend(str(helper.parent))
    monkeypatch.delitem(sys.modules, helper.stem, raising=False)

    def answer():
        module = importlib.reload(importlib.import_module(helper.stem))
        return module.NOTE, True

    assert cached_answer(tmp_path / "cache", ["describe", "x"], answer) == "weight one"
    before = helper.stat()
    helper.write_text('NOTE = "weight two"\n')
    os.utime(helper, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert helper.stat().st_size == before.st_size and helper.stat().st_mtime_ns == before.st_mtime_ns
    assert cached_answer(tmp_path / "cache", ["describe", "x"], answer) == "weight two"
    monkeypatch.delitem(sys.modules, helper.stem, raising=False)


# --- seeds computed on different data are not pooled --------------------------------------------------------------

def on_data(seed: int, fingerprint: str, method: str = "l2", order_by_seed: bool = False) -> dict:
    """The consistent record as seed ``seed`` of ``method`` computed on the data of ``fingerprint``."""
    record = copy.deepcopy(consistent())
    record.update(seed=seed, method=method, key=hashlib.sha256(f"{method}{seed}{fingerprint}".encode()).hexdigest()[:16],
                  label=f"ext-class/{method}/seed{seed}", identity={"data_sha256": fingerprint * 64})
    record["config"]["data"].update(root=f"/machine-{fingerprint}", order_by_seed=order_by_seed,
                                    class_order_seed=seed if order_by_seed else 0)
    return record


def test_seeds_of_one_configuration_on_different_data_are_kept_apart_with_one_warning(tmp_path, caplog):
    from benchbackcompat.record import parse_record
    from benchbackcompat.report.grouping import build_tables
    from benchbackcompat.results.frames import results_frame

    records = [on_data(0, "a"), on_data(1, "b"), on_data(2, "b")]  # machine a gave seed 0, machine b seeds 1 and 2
    tables = build_tables(records)
    assert [(t.variant, [r.seed for r in t.rows[0].records]) for t in tables] == [
        ("data " + "a" * 8, [0]), ("data " + "b" * 8, [1, 2])]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "ext-class" in warnings[0] and "a" * 8 in warnings[0] and "b" * 8 in warnings[0]
    frame = results_frame([parse_record(r) for r in records])  # load_results: two configurations, not one of three seeds
    assert frame.groupby("config_hash")["seed"].nunique().sort_values().tolist() == [1, 2]
    assert frame.groupby(["scenario", "variant", "method"])["seed"].nunique().sort_values().tolist() == [1, 2]


def test_two_methods_on_different_data_for_the_same_seed_are_kept_apart_under_a_seeded_class_order(caplog):
    from benchbackcompat.report.grouping import build_tables

    tables = build_tables([on_data(0, "a", "l2", True), on_data(0, "b", "independent", True)])
    assert [(t.variant, [row.method for row in t.rows]) for t in tables] == [
        ("data " + "a" * 8, ["l2"]), ("data " + "b" * 8, ["independent"])]


def test_seeds_that_draw_their_own_class_order_pool_with_their_own_fingerprints_and_no_warning(caplog):
    from benchbackcompat.report.grouping import build_tables

    [table] = build_tables([on_data(0, "a", "l2", True), on_data(1, "b", "l2", True),
                            on_data(0, "a", "independent", True), on_data(1, "b", "independent", True)])
    assert table.variant == "" and all(len(row.records) == 2 for row in table.rows)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_a_newer_run_that_records_its_data_source_is_one_table_beside_the_older_records(caplog):
    # machine A's records predate the dataset's source fingerprint (ift and l2, seeds 0-1); machine B's carry it
    # (cores and bct, the same seeds). Each seed orders its own classes, so every seed has its own data fingerprint
    # and A's and B's differ for each seed: two tables, one per machine, not one per seed and machine
    from benchbackcompat.report.grouping import build_tables

    older = [on_data(seed, fingerprint, method, True) for method in ("ift", "l2") for seed, fingerprint in ((0, "a"), (1, "b"))]
    newer = [on_data(seed, fingerprint, method, True) for method in ("cores", "bct") for seed, fingerprint in ((0, "c"), (1, "d"))]
    for record in newer:
        record["data_source"] = "e" * 64
    tables = build_tables(older + newer)
    assert sorted((t.variant, sorted(row.method for row in t.rows), {len(row.records) for row in t.rows}) for t in tables) == [
        ("data " + "e" * 8, ["bct", "cores"], {2}), ("data unknown", ["ift", "l2"], {2})]
    # a newer record without the source but on the same data as one with it (same seed, same fingerprint) joins it
    joined = on_data(1, "d", "lwf", True)
    tables = build_tables(older + newer + [joined])
    assert sorted(row.method for t in tables if t.variant == "data " + "e" * 8 for row in t.rows) == ["bct", "cores", "lwf"]


def test_a_plugin_whose_entry_point_registers_other_names_is_named_not_suggested_to_itself(tmp_path, monkeypatch, capsys):
    install_plugin(tmp_path, "dupl2", IMPOSTOR, dist="evil-plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert main(["run", "--out", str(tmp_path / "run"), "--scenario", "both", "--methods", "dupl2", "--dry-run"]) == 2
        message = capsys.readouterr().err
        assert "Did you mean 'dupl2'" not in message and message.count("\n") == 1, message
        assert "method 'dupl2': the plugin of that name (distribution evil-plugin 1.0) loads but registers no method " \
               "called 'dupl2'" in message, message
    finally:
        sys.modules.pop("dupl2", None)


def test_a_cell_folder_linked_out_of_the_results_folder_is_refused_and_nothing_there_is_deleted(tmp_path, capsys):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    precious = {name: outside / name for name in ("record.json.gz", "step-0.pt", "traceback.txt")}
    for path in precious.values():
        path.write_bytes(b"precious")
    store = ResultStore(tmp_path / "results")
    (tmp_path / "results" / "cells").mkdir(parents=True)
    link = tmp_path / "results" / "cells" / ("c" * 16)
    link.symlink_to(outside, target_is_directory=True)
    for call in (lambda: store.clear_cell("c" * 16), lambda: store.write_record("c" * 16, {"key": "c" * 16})):
        with pytest.raises(BenchError) as caught:  # --force clears a cell before it is recomputed
            call()
        message = str(caught.value)
        assert f"cell folder {link} resolves to {outside}, outside the results folder" in message and "\n" not in message
    assert sorted(p.name for p in outside.iterdir()) == sorted(precious)
    assert all(path.read_bytes() == b"precious" for path in precious.values())
    assert main(["status", "--results", str(tmp_path / "results")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
