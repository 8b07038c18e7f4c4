"""`benchbackcompat leaderboard` and `show` on stored results: merging directories, regeneration, curves,
and observer plugins (TensorBoard) loaded through the entry point group ``benchbackcompat.observers``."""
from __future__ import annotations

import copy
import gzip
import json
import re
import shlex
from pathlib import Path

import pytest

from benchbackcompat.record import parse_record
from benchbackcompat.cli import main
from benchbackcompat.observers.tensorboard import TensorBoardObserver
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.report.grouping import build_tables
from benchbackcompat.report.merge import merge_records
from benchbackcompat.report.reproduce import reproductions
from benchbackcompat.store import ResultStore
from test_statistics import _single

FIXTURE = Path(__file__).parent / "fixtures" / "leaderboard_records.json"


def fixture_records() -> list[dict]:
    return json.loads(FIXTURE.read_text())


def store(root: Path, records: list[dict]) -> Path:
    results = ResultStore(root)
    for record in records:
        results.write_record(record["key"], record)
    return root


def row(text: str, heading: str, method: str) -> list[str]:
    block = text.split(heading, 1)[1].split("\n\n", 2)[1]
    line = next(line for line in block.splitlines() if re.match(rf"\| {re.escape(method)}[ \[]", line))
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def cell(text: str, heading: str, method: str, column: str) -> str:
    """The value of ``method``'s row under the header ``column`` in the first table after ``heading``."""
    block = text.split(heading, 1)[1].split("\n\n", 2)[1]
    header = next(line for line in block.splitlines() if line.startswith("| method"))
    names = [c.strip().split(" (")[0] for c in re.split(r"(?<!\\)\|", header)[1:-1]]
    return row(text, heading, method)[names.index(column)]


def with_cross(record: dict, cross: float) -> dict:
    """``record`` (one update, cmc@1) with its cross-test C[1][0] set to ``cross`` and the summaries that follow
    from it, by hand (the store refuses a record whose summaries contradict its matrix)."""
    C, values = record["matrices"]["cmc@1"], record["metrics"]["cmc@1"]
    C[1][0] = cross
    old, new, reference = C[0][0], C[1][1], values["reference_self"]
    values.update(cross=cross, AA=(old + cross + new) / 3, AC=float(cross > old), ACA=cross if cross > old else 0.0,
                  p_com=(cross - old) / (reference - old))
    return record


@pytest.fixture
def two_dirs(tmp_path) -> tuple[Path, Path]:
    records = fixture_records()
    a = store(tmp_path / "a", records)
    by_label = {r["label"]: r for r in records}
    rerun = with_cross(copy.deepcopy(by_label["ext-class/l2/seed0"]), 99.0)  # same key, other numbers (another machine)
    fixed = copy.deepcopy(by_label["ext-class/l2/seed0"])  # the diverged cell, finished elsewhere
    fixed.update(key="e0000000000000e0", label="ext-class/unstable/seed0", method="unstable")
    extra = copy.deepcopy(by_label["ext-class/l2/seed1"])  # a new seed
    extra.update(key="e0000000000000b2", label="ext-class/l2/seed2", seed=2)
    with_cross(extra, 37.0)
    b = store(tmp_path / "b", [rerun, fixed, extra])
    return a, b


def test_merge_rule_first_directory_wins_finished_beats_unfinished_never_double_counted(two_dirs, capsys):
    a, b = two_dirs
    assert main(["leaderboard", "--results", str(a), "--results", str(b)]) == 0
    out = capsys.readouterr()
    l2 = row(out.out, "### ext-class", "l2")
    cross = cell(out.out, "### ext-class", "l2", "cross")
    assert cross.strip("*").startswith("35.00 ± ") and l2[-1] == "3"  # cross of seeds 0, 1, 2: 33, 35, 37 (not 99, not 4 seeds)
    unstable = row(out.out, "### ext-class", "unstable")
    assert cell(out.out, "### ext-class", "unstable", "cross").startswith("33.00") and unstable[-1] == "1"  # finished in b beats diverged in a
    assert "2 duplicate cells counted once" in out.err
    assert main(["leaderboard", "--results", str(b), "--results", str(a)]) == 0
    cross = cell(capsys.readouterr().out, "### ext-class", "l2", "cross")
    assert cross.strip("*").startswith(f"{(99 + 35 + 37) / 3:.2f} ± ")  # now b is listed first: its seed 0 wins


def test_merge_reports_discarded_duplicates():
    record = fixture_records()[2]
    other = copy.deepcopy(record)
    other["metrics"]["cmc@1"]["self"] = 0.0
    merged = merge_records([("x", [record]), ("y", [copy.deepcopy(record)]), ("z", [other])])
    assert merged.records == [parse_record(record)]
    assert [(d.kept, d.dropped, d.differs) for d in merged.duplicates] == [("x", "y", False), ("x", "z", True)]


def test_leaderboard_out_regenerates_byte_for_byte(two_dirs, tmp_path, monkeypatch, capsys):
    a, _ = two_dirs
    out = tmp_path / "board"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "946684800")  # 2000-01-01
    assert main(["leaderboard", "--results", str(a), "--out", str(out)]) == 0
    first = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    readme = first[out / "README.md"].decode()
    assert f"benchbackcompat leaderboard --results {a} --out {out}" in readme and "2000-01-01" in readme
    mine = out / "figures" / "mine.png"
    mine.write_bytes(b"drawn by hand")  # not the renderer's: kept, as everything it cannot prove it wrote
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1924905600")  # 2030-12-31
    assert main(["leaderboard", "--results", str(a), "--out", str(out)]) == 0
    second = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert second == {**{p: data.replace(b"2000-01-01", b"2030-12-31") for p, data in first.items()},
                      mine: b"drawn by hand"}
    assert "wrote" in capsys.readouterr().out


def test_leaderboard_without_results_is_a_one_line_error(tmp_path, capsys):
    assert main(["leaderboard", "--results", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_show_prints_the_curve_summary(two_dirs, capsys):
    a, _ = two_dirs
    assert main(["show", "ext-class/independent/seed0", "--results", str(a)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\| 1 +\| 2 +\| 2\.500 -> 1\.500 \(min 1\.500\) +\| 0\.050 -> 0\.010 +\|", out), out


def test_curves_are_stored_beside_the_record_and_read_from_either_place(tmp_path):
    import hashlib

    (record,) = [r for r in fixture_records() if r["label"] == "ext-class/independent/seed0"]
    new = ResultStore(tmp_path / "new")
    folder = new.write_record(record["key"], record).parent
    stored = json.loads(gzip.decompress((folder / "record.json.gz").read_bytes()))
    assert "curves" not in stored and json.loads(gzip.decompress((folder / "curves.json.gz").read_bytes())) == record["curves"]
    content = {k: v for k, v in stored.items() if k != "sha256"}  # the checksum, written out: sorted compact JSON
    assert stored["sha256"] == hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert new.record(record["key"]) is not None and new.curves(record["key"]) == record["curves"]
    new.clear_cell(record["key"])
    assert not (folder / "curves.json.gz").exists() and new.curves(record["key"]) == {}
    old = tmp_path / "old" / "cells" / record["key"]  # a record written when the curves were inside it
    old.mkdir(parents=True)
    inline = {"format": 1, **record}
    inline["sha256"] = hashlib.sha256(json.dumps(inline, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    (old / "record.json").write_text(json.dumps(inline))
    assert ResultStore(tmp_path / "old").curves(record["key"]) == record["curves"]


class FakeWriter:
    instances: list[FakeWriter] = []

    def __init__(self, log_dir: str) -> None:
        self.log_dir, self.scalars, self.closed = log_dir, [], False
        FakeWriter.instances.append(self)

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars.append((tag, value, step))

    def close(self) -> None:
        self.closed = True


class FakeEntry:
    def __init__(self, name: str, factory) -> None:
        self.name, self.factory = name, factory

    def load(self):
        return self.factory


def observers(monkeypatch, *entries: FakeEntry) -> None:
    monkeypatch.setattr(PluginHost, "observer_entry_points", staticmethod(lambda: list(entries)))


def test_observers_load_from_their_entry_point_group_and_see_curves_and_results(monkeypatch, tmp_path, caplog):
    FakeWriter.instances.clear()

    def broken(results):
        raise RuntimeError("no display")

    observers(monkeypatch, FakeEntry("broken", broken), FakeEntry("missing", lambda results: None),
              FakeEntry("tb", lambda results: TensorBoardObserver(results / "tensorboard", FakeWriter)))
    host = PluginHost()
    assert host.load_observers(tmp_path) == ["tb"]
    assert "observer 'broken' disabled: RuntimeError: no display" in caplog.text
    host.manager.hook.bbc_on_log(cell="multi-step/hoc/seed0", step=1, epoch=0, values={"loss": 2.0, "lr": 0.1})
    record = next(r for r in fixture_records() if r["label"] == "multi-step/hoc/seed0")
    host.manager.hook.bbc_on_cell_finished(record=record)
    (writer,) = FakeWriter.instances
    assert writer.log_dir == str(tmp_path / "tensorboard" / "multi-step/hoc/seed0") and writer.closed
    assert ("step-1/loss", 2.0, 0) in writer.scalars and ("step-1/lr", 0.1, 0) in writer.scalars
    assert [s for s in writer.scalars if s[0] == "accuracy/cmc@1/self"] == [
        ("accuracy/cmc@1/self", 50.0, 1), ("accuracy/cmc@1/self", 60.0, 2), ("accuracy/cmc@1/self", 70.0, 3)]
    assert ("accuracy/cmc@1/AA_tau", 55.0, 2) in writer.scalars and ("final/cmc@1/AC", 1.0, 0) in writer.scalars
    assert host.load_observers(tmp_path) == ["tb"] and len(FakeWriter.instances) == 1  # registered once


def test_tensorboard_factory_is_inert_without_tensorboard(tmp_path):
    from benchbackcompat.observers.tensorboard import create

    try:
        import tensorboard  # noqa: F401
    except ImportError:
        assert create(tmp_path) is None
    else:
        assert isinstance(create(tmp_path), TensorBoardObserver)


@pytest.mark.slow
def test_a_run_feeds_registered_observers(monkeypatch, tmp_path):
    FakeWriter.instances.clear()
    observers(monkeypatch, FakeEntry("tb", lambda results: TensorBoardObserver(results / "tb", FakeWriter)))
    tiny = ["--set", "data.num_classes=4", "--set", "data.train_per_class=16", "--set", "data.test_per_class=6",
            "--set", "data.open_classes=2", "--set", "data.pretrain_classes=4", "--set", "train.epochs=1",
            "--set", "train.batch_size=32", "--set", "model.embedding_dim=8", "--set", "metrics=[\"cmc@1\"]"]
    assert main(["run", "--out", str(tmp_path), *tiny, "--scenario", "ext-class", "--methods", "l2"]) == 0
    (writer,) = FakeWriter.instances
    tags = {tag for tag, _, _ in writer.scalars}
    assert {"step-1/loss", "step-1/l2", "step-1/lr", "accuracy/cmc@1/self", "final/cmc@1/p_com"} <= tags
    assert writer.log_dir == str(tmp_path / "tb" / "ext-class/l2/seed0") and writer.closed


@pytest.mark.slow
def test_reproduce_commands_name_only_the_stored_cells():
    # ext-class holds bct and hbct at seeds 0 and 1, ext-data hbct at seed 0 alone: one preset file, two commands,
    # neither of which would compute a cell that was never stored (ext-data/bct, ext-data/hbct/seed1)
    records = []
    for scenario, method, seed in [("ext-class", "bct", 0), ("ext-class", "bct", 1), ("ext-class", "hbct", 0),
                                   ("ext-class", "hbct", 1), ("ext-data", "hbct", 0)]:
        record = _single(method, seed, 100, 50, 80, 70, 50, 80)
        record.update(scenario=scenario, kind=scenario, key=f"{scenario}{method}{seed}",
                      label=f"{scenario}/{method}/seed{seed}")
        records.append(record)
    (reproduction,) = reproductions(build_tables(records))
    assert reproduction.commands("p.toml") == [
        "benchbackcompat run --preset p.toml --scenario ext-class --methods bct,hbct --seeds 0,1",
        "benchbackcompat run --preset p.toml --scenario ext-data --methods hbct --seeds 0"]


def test_reproduce_commands_recompute_the_same_cells_whatever_the_presets_say_now(monkeypatch, tmp_path, capsys):
    results, board = tmp_path / "results", tmp_path / "board"
    tiny = ["--set", "data.num_classes=4", "--set", "data.train_per_class=16", "--set", "data.test_per_class=6",
            "--set", "data.open_classes=2", "--set", "data.pretrain_classes=4", "--set", "train.epochs=1",
            "--set", "train.batch_size=32", "--set", "model.embedding_dim=8", "--set", "metrics=[\"cmc@1\"]"]
    assert main(["run", "--out", str(results), *tiny, "--scenario", "ext-class", "--methods", "l2,hoc",
                 "--set", "methods.hoc.lam=0.3"]) == 0
    keys = sorted(p.name for p in (results / "cells").iterdir())
    changed = tmp_path / "presets"  # today's quick preset no longer says what the records were computed with
    changed.mkdir()
    (changed / "quick.toml").write_text('[scenarios.ext-class]\nkind = "ext-class"\ntrain = { epochs = 9 }\n')
    monkeypatch.setenv("BENCHBACKCOMPAT_PRESETS", str(changed))
    assert main(["leaderboard", "--results", str(results), "--out", str(board)]) == 0
    readme = (board / "README.md").read_text()
    (command,) = [line for line in readme.splitlines() if line.startswith("benchbackcompat run ")]
    argv = shlex.split(command)[1:]
    assert argv[:2] == ["run", "--preset"] and Path(argv[2]).parent == board / "reproduce"
    assert main([*argv, "--out", str(results)]) == 0
    assert sorted(p.name for p in (results / "cells").iterdir()) == keys  # the same keys: nothing new was computed


def test_page_headers_name_the_rendering_commit_and_whether_each_cell_holds_there(two_dirs, tmp_path):
    from benchbackcompat.report.provenance import Verification, header_markdown

    a, _ = two_dirs
    records = list(ResultStore(a).records())
    held = header_markdown(records, "2000-01-01", Verification("abc123"))
    assert "project commit: abc123 (every cell's code identity verified at this commit; computed at" in held
    stale = header_markdown(records, "2000-01-01", Verification("abc123", {records[0].key: "method source changed"}))
    assert f"1 of {len(records)} cells were computed by other code or from an" in stale and records[0].label in stale


def test_published_pages_leave_out_cells_computed_by_other_code_and_say_so(two_dirs, tmp_path, capsys):
    a, _ = two_dirs
    records = list(ResultStore(a).records())
    out = tmp_path / "board"
    # the fixture records name another method code than the installed one: without --verified-only they are
    # published and the headers name them; with it none can be published, in one line
    assert main(["leaderboard", "--results", str(a), "--out", str(out)]) == 0
    assert f"of {len(records)} cells were computed by other code" in (out / "README.md").read_text()
    assert main(["leaderboard", "--results", str(a), "--out", str(tmp_path / "v"), "--verified-only"]) == 2
    assert "publish without --verified-only" in capsys.readouterr().err


def test_the_left_out_section_counts_cells_by_reason_and_scenario(two_dirs):
    from benchbackcompat.report.publish import left_out_markdown

    a, _ = two_dirs
    records = list(ResultStore(a).records())[:3]
    text = left_out_markdown([(r, "method source_sha256 changed (aa -> bb)") for r in records])
    scenarios = sorted({r.scenario for r in records})
    assert text.startswith("## Left out\n\n3 stored cells are not on these pages")
    assert "- method source\\_sha256 changed: " in text and all(s in text for s in scenarios)
