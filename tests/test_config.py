"""Configuration: precedence, presets, and one-line errors before any training."""
from __future__ import annotations

import pytest

from benchbackcompat.cli import main
from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.execution.presets import available_presets, resolve_run


def test_precedence_defaults_then_preset_then_command_line():
    run = resolve_run(preset="quick", scenarios=["both"], methods=["l2"])
    scenario = run.scenarios[0].config
    assert scenario.train.lr == 0.05  # preset [defaults.train]
    assert scenario.train.epochs == 32  # scenario table (over [defaults.train]'s 6)
    assert scenario.train.nesterov is False  # built-in default
    assert scenario.architectures == ["convnet-s", "convnet-m"]  # scenario table
    assert resolve_run(preset="quick", scenarios=["cl2r"], methods=["er"]).scenarios[0].config.train.epochs == 6
    run = resolve_run(preset="quick", scenarios=["both"], methods=["l2"], assignments=["train.epochs=2", "methods.l2.weight=3"],
                      scenario_overrides={"data": {"name": "tinyimagenet"}})
    assert run.scenarios[0].config.train.epochs == 2
    assert run.scenarios[0].config.data.name == "tinyimagenet"
    assert run.method_params["l2"] == {"weight": 3}


def test_presets_quick_and_paper_validate_every_scenario():
    assert {"quick", "paper"} <= set(available_presets())
    for preset in ("quick", "paper"):
        from benchbackcompat.execution.presets import load_preset

        names = list(load_preset(preset)["scenarios"])
        run = resolve_run(preset=preset, scenarios=names, methods=["independent"])
        assert len(run.scenarios) == len(names)


@pytest.mark.parametrize(
    "assignment,expected",
    [
        ("train.epochs=0", "train.epochs: Input should be greater than or equal to 1"),
        ("train.optimizer='adam'", "train.optimizer: allowed: 'sgd' or 'adamw'"),
        ("train.epochz=3", "train.epochz: unknown key"),
        ("old_class_fraction=1.5", "old_class_fraction: Input should be less than 1"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(assignment, expected):
    with pytest.raises(BenchError) as info:
        resolve_run(preset="quick", scenarios=["both"], methods=["l2"], assignments=[assignment])
    message = str(info.value)
    assert expected in message and "\n" not in message


def test_unknown_scenario_lists_known_names_with_a_suggestion():
    with pytest.raises(UnknownNameError) as info:
        resolve_run(preset="quick", scenarios=["bothh"], methods=["l2"])
    assert "Did you mean 'both'?" in str(info.value) and "ext-class" in str(info.value)


def test_malformed_preset_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[scenarios.x\nkind = 'both'")
    with pytest.raises(BenchError, match="malformed preset"):
        resolve_run(preset=str(bad), scenarios=["x"], methods=["l2"])


def test_cli_errors_are_one_line_and_exit_2(capsys, tmp_path):
    assert main(["run", "--scenario", "both", "--methods", "l3", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown method 'l3'. Did you mean 'l2'?") and "\n" not in err
    assert main(["run", "--scenario", "both", "--methods", "l2", "--set", "methods.l2.weight=-1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "hyperparameters of method 'l2'" in err and "weight" in err
    assert not (tmp_path / "cells").exists()  # nothing trained


def test_dry_run_prints_configuration_and_steps(capsys, tmp_path):
    assert main(["run", "--scenario", "both,cl2r,ext-data", "--methods", "independent,er", "--dry-run", "--out",
                 str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert '"epochs": 6' in out
    assert "step 1: classes [0, 20), knows 20, convnet-m, init scratch" in out  # all their images: no share named
    assert "er: not applicable" in out
    assert "step 6: classes [17, 20), knows 20, convnet-s, init previous, replay" in out
    assert "step 0: classes [0, 20) (30% of their images), knows 20" in out


def test_cpu_preset_is_the_published_scale_and_its_seeds_vary_the_class_order():
    from benchbackcompat.execution.plugin_host import PluginHost
    from benchbackcompat.execution.presets import load_preset
    from benchbackcompat.execution.plan import make_plan

    names = list(load_preset("cpu")["scenarios"])
    run = resolve_run(preset="cpu", scenarios=names, methods=["independent"], seeds=[0, 1])
    configs = {s.name: s.config for s in run.scenarios}
    assert all(c.data.num_classes is None or c.data.num_classes >= 50 for c in configs.values() if c.kind != "model-zoo")
    assert {configs[n].kind for n in names if configs[n].data.name == "tinyimagenet"} == {"ext-class", "multi-step"}
    assert configs["model-zoo"].pretrained is True  # the zoo is published only with real weights
    plan = make_plan(run, PluginHost())
    both = [c for c in plan.cells if c.scenario.name == "both"]
    assert [c.scenario.config.data.class_order_seed for c in both] == [0, 1]  # so their configurations (keys) differ
    quick = make_plan(resolve_run(preset="quick", scenarios=["both"], methods=["independent"], seeds=[0, 1]), PluginHost())
    assert {c.scenario.config.data.class_order_seed for c in quick.cells} == {None}  # quick keeps the label order
