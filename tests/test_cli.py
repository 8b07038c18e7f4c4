"""The command line in pipes and scripts, and the per-cell time limit (fault injection: a loss that hangs)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchbackcompat.cli import main
from benchbackcompat.store import ResultStore
from benchbackcompat.testing.scenarios import tiny_run_args
from helpers import install_plugin

ROOT = Path(__file__).resolve().parents[1]
TINY = tiny_run_args(epochs=1)


def cli(*args: str, stdin_pipe_to: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "plugins"), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, "-m", "benchbackcompat", *args]
    if stdin_pipe_to:  # the output piped into a command that stops reading early
        line = " ".join(map(repr, command)) + f" | {stdin_pipe_to}"
        return subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, env=env)
    return subprocess.run(command, capture_output=True, text=True, env=env)


@pytest.fixture
def hanging_plugin(tmp_path, monkeypatch):
    """An installed third-party method whose loss never returns once an old model exists (step 1)."""
    install_plugin(tmp_path, "hanging_method", """
        import time

        import benchbackcompat
        from bbc_baselines.l2 import L2

        class Hanging(L2):
            name = "hanging"
            description = "its loss sleeps forever at step 1"

            def loss(self, model, batch, ctx):
                if ctx.old_model is not None:
                    time.sleep(3600)
                return super().loss(model, batch, ctx)

        @benchbackcompat.hookimpl
        def bbc_register_methods():
            return [Hanging]
""", dist="hanging-plugin", entry="hanging")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("hanging_method", None)


@pytest.mark.slow
def test_a_hung_cell_times_out_and_the_next_cell_runs(hanging_plugin, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["run", "--out", str(out), *TINY, "--scenario", "ext-class", "--methods", "hanging,independent",
            "--cell-timeout", "40"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    records = {r.method: r for r in ResultStore(out).records()}
    assert records["independent"].status == "finished"  # the cell after the hung one
    assert "hanging" not in records  # failed: not recorded, so a re-run retries it
    assert "ext-class/hanging/seed0: failed (timed out after 40 s in step 1 of 2 (steps counted from 0) " \
           "(--cell-timeout))" in err
    assert (out / "cells").is_dir() and ResultStore(out).partial_cells()  # its step 0 stays saved


def test_cell_timeout_and_workers_must_be_positive_in_one_line(capsys):
    for option in (["--workers", "0"], ["--cell-timeout", "-1"], ["--seeds", "2-0"]):
        with pytest.raises(SystemExit) as exit:
            main(["run", "--scenario", "ext-class", "--methods", "l2", *option])
        assert exit.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: argument {option[0]}"), err


def test_seed_ranges_are_accepted(tmp_path, capsys):
    assert main(["run", "--scenario", "ext-class", "--methods", "l2", "--seeds", "0-2", "--dry-run",
                 "--out", str(tmp_path), *TINY]) == 0
    assert '"seeds": [\n    0,\n    1,\n    2\n  ]' in capsys.readouterr().out


def test_a_misspelt_set_key_suggests_the_right_one(capsys):
    assert main(["run", "--scenario", "ext-class", "--methods", "l2", "--set", "train.epoch=3", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "train.epoch: unknown key, did you mean train.epochs? (known: epochs," in err and len(err.splitlines()) == 1


def test_run_help_shows_examples_and_every_option_has_help():
    from benchbackcompat.cli import build_parser

    parser = build_parser()
    run = parser._subparsers._group_actions[0].choices["run"]
    assert "examples:" in run.format_help() and "--smoke" in run.format_help()
    for name, sub in parser._subparsers._group_actions[0].choices.items():
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
    assert "``" not in parser.format_help()  # no raw reStructuredText


def test_piping_into_head_exits_quietly():
    done = cli("list", "presets", stdin_pipe_to="head -c 10")
    assert done.stderr == "" and done.returncode == 0, done


def test_a_log_file_that_cannot_be_written_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    done = cli("list", "presets", "--log-file", str(tmp_path / "file" / "log.txt"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "cannot access" in done.stderr, done.stderr


def test_show_of_a_missing_results_directory_fails_in_one_line(tmp_path, capsys):
    assert main(["show", "--results", str(tmp_path / "missing")]) == 2
    missing = tmp_path / "missing"
    assert capsys.readouterr().err == (
        f"error: no results in {missing}: neither a results folder (no cells/ folder) nor a packed store (no "
        f"packed.json); run `benchbackcompat run --out {missing}` first, or pass a store that `benchbackcompat pack` "
        "wrote\n")


def test_list_scenarios_and_show_do_not_import_torch(tmp_path):
    code = ("import sys; from benchbackcompat.cli import main; main(['list', 'scenarios']); "
            f"main(['show', '--results', {str(tmp_path)!r}]); print('torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip().endswith("False"), done


@pytest.mark.slow
def test_smoke_runs_tiny_data_for_one_epoch_and_dry_run_marks_each_cell(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--scenario", "ext-class", "--methods", "l2", "--smoke", "--out", str(out),
                 "--set", "data.num_classes=6"]) == 0
    (record,) = ResultStore(out).records()
    assert record.status == "finished" and record.config["train"]["epochs"] == 1
    assert record.config["data"]["train_per_class"] == 10 and record.config["train"].get("min_steps", 0) == 0
    # seed 1: a record of the same label and configuration under another key (older code): stale
    ResultStore(out).write_record("1" * 16, {**record.model_dump(mode="json"), "key": "1" * 16,
                                             "label": "ext-class/l2/seed1", "seed": 1})
    capsys.readouterr()
    dry = ["run", "--scenario", "ext-class", "--methods", "l2", "--smoke", "--out", str(out), "--set",
           "data.num_classes=6", "--seeds", "0-2", "--dry-run"]
    assert main(dry) == 0
    states = dict(line.strip().split(": ", 1) for line in capsys.readouterr().out.splitlines() if "(key " in line)
    labels = {label.split(" ")[0]: (label.split("key ")[1].rstrip(")"), state) for label, state in states.items()}
    assert labels["ext-class/l2/seed0"][1] == "done (finished)"
    assert labels["ext-class/l2/seed1"][1] == "stale (recomputed under a new key)"
    assert labels["ext-class/l2/seed2"][1] == "pending"
    folder = ResultStore(out).cell_dir(labels["ext-class/l2/seed2"][0])
    folder.mkdir(parents=True)
    (folder / "step-0.pt").write_bytes(b"")
    assert main(dry) == 0
    assert "ext-class/l2/seed2 (key " in (out_text := capsys.readouterr().out) and "partial (1 steps saved)" in out_text


def test_the_table_after_run_fits_120_columns_unless_wide():
    from benchbackcompat.cli.run import WIDTH, terminal_tables

    def record(method: str, seed: int) -> dict:
        C = [[40.0 + seed, None], [30.0 + seed, 50.0]]
        values = {"old_self": 40.0 + seed, "reference_self": 52.0, "self": 50.0, "cross": 30.0 + seed, "p_up": -0.04,
                  "p_com": (30.0 - 40.0) / (52.0 - 40.0 - seed)}
        return {"key": f"{method}{seed}".ljust(16, "0"), "label": f"ext-class/{method}/seed{seed}", "scenario": "ext-class",
                "kind": "ext-class", "preset": "quick", "method": method, "seed": seed, "dataset": "embedded",
                "config": {"kind": "ext-class"}, "status": "finished",
                "matrices": {"cmc@1": C, "map": C}, "metrics": {"cmc@1": values, "map": values}}

    records = [record(method, seed) for method in ("a-rather-long-method-name", "l2") for seed in (0, 1, 2)]
    wide, narrow = terminal_tables(records, wide=True), terminal_tables(records)
    assert max(map(len, wide.splitlines())) > WIDTH  # all twelve columns do not fit
    assert max(map(len, narrow.splitlines())) <= WIDTH and "P_com (cmc@1)" in narrow and "old self" not in narrow
    assert "more columns: run again with --wide" in narrow


def test_logging_options_are_accepted_before_the_command_too(capsys):
    from benchbackcompat.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["-q", "list", "presets"]).quiet and parse(["list", "presets", "-q"]).quiet
    assert not parse(["list", "presets"]).quiet
    assert parse(["-v", "list", "presets"]).verbose == 1 and parse(["list", "presets", "-vv"]).verbose == 2
    assert parse(["--log-file", "a.log", "status"]).log_file == Path("a.log")
    assert main(["-q", "list", "presets"]) == 0 and "\nquick " in capsys.readouterr().out


def test_calibrate_names_log_options_given_to_its_runs_and_starts_nothing(tmp_path, caplog):
    assert main(["calibrate", "--out", str(tmp_path), "--", "--workers", "2", "--no-progress", "-vv"]) == 2
    assert "--progress, --verbose after `--`" in caplog.text and "give them before `--`" in caplog.text
    assert not any(tmp_path.iterdir())


def test_methods_all_plans_every_available_method(tmp_path):
    from benchbackcompat.execution.plugin_host import PluginHost
    from benchbackcompat.execution.request import RunRequest
    from benchbackcompat.execution.runner import run

    host = PluginHost()
    host.load_all()
    outcome = run(RunRequest(scenarios="ext-class", methods="all", smoke=True, dry_run=True, out=tmp_path))
    assert sorted(outcome.plan.methods) == sorted(host.methods()) and len(outcome.plan.methods) > 10


def test_the_terminal_table_is_plain_text_and_shows_the_terms_of_a_p_com_it_does_not_show(monkeypatch, capsys, tmp_path):
    from benchbackcompat.cli.run import terminal_tables

    def record(method: str, old: float, cross: float, reference: float) -> dict:
        return {"key": method.ljust(16, "0"), "label": f"ext-class/{method}/seed0", "scenario": "ext-class",
                "kind": "ext-class", "preset": "quick", "method": method, "seed": 0, "dataset": "embedded",
                "config": {"kind": "ext-class"}, "status": "finished", "matrices": {"cmc@1": [[old, None], [cross, 55.0]]},
                "metrics": {"cmc@1": {"old_self": old, "reference_self": reference, "self": 55.0, "cross": cross,
                                      "p_com": (cross - old) / (reference - old)}}}

    # a 4-point update (reference 54 vs old 50): P_com is not shown; its terms are, by hand: cross 47.5 and 52.25
    records = [record("my_method", 50.0, 47.5, 54.0), record("l2", 50.0, 52.25, 54.0)]
    text = terminal_tables(records)
    header = next(line for line in text.splitlines() if line.startswith("| method"))
    assert [h.strip() for h in header.split("|")[4:8]] == ["P_com (cmc@1)", "cross (cmc@1)", "old self (cmc@1)",
                                                          "ref self (cmc@1)"]
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| l2 ") or "my_method" in line}
    assert "| –[1] " in rows["l2"] and "| 52.25 " in rows["l2"] and "| 50.00 " in rows["l2"] and "| 54.00 " in rows["l2"]
    assert "| 47.50 " in rows["my_method"]  # the name plain: no my\_method
    assert "\\" not in text and "[^" not in text and "**" not in text and "`" not in text
    assert "\nNotes:\n[1] –: P_com not shown" in text
    # a decidable P_com (a 20-point update): no terms added, the best value starred and the star explained
    decided = terminal_tables([record("l2", 50.0, 60.0, 70.0), record("hoc", 50.0, 52.0, 70.0)])
    assert "cross (cmc@1)" in decided and "old self (cmc@1)" not in decided
    assert "0.500 *" in decided and "*: no row is significantly better in its column" in decided
    # `leaderboard` prints plain text to a terminal, Markdown when redirected
    for r in records:
        ResultStore(tmp_path).write_record(r["key"], r)
    assert main(["leaderboard", "--results", str(tmp_path)]) == 0
    assert "[^1]" in capsys.readouterr().out
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["leaderboard", "--results", str(tmp_path)]) == 0
    assert "[^1]" not in (out := capsys.readouterr().out) and "Notes:\n[1]" in out and "my_method" in out
