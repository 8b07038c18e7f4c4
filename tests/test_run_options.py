"""The run options are defined once, by ``RunRequest``'s fields: the command line's ``run`` options and the Python
API's keywords are derived from them or checked against them, and a command line gives the request written out."""
from __future__ import annotations

import inspect
from pathlib import Path

import benchbackcompat
from benchbackcompat.cli import build_parser
from benchbackcompat.cli.run import run_request
from benchbackcompat.execution.request import RunRequest

DISPLAY_ONLY = {"wide"}  # `run` options that only choose what the terminal shows
LOGGING = {"verbose", "quiet", "log_file", "progress", "help"}


def run_parser():
    parser = build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return action.choices["run"]


def test_every_request_field_is_one_run_option_with_its_help_and_nothing_else_is():
    options = {a.dest: a for a in run_parser()._actions if a.dest not in LOGGING}
    assert set(options) - DISPLAY_ONLY == set(RunRequest.model_fields)
    for name, field in RunRequest.model_fields.items():
        assert options[name].help == field.description, name
        assert options[name].required == field.is_required(), name


def test_the_api_keywords_are_the_request_fields_with_the_same_defaults_but_workers():
    """One default differs, by design: the API's workers stay in the calling process (spawned workers re-run the
    calling script), the command line's decide by the run's size."""
    parameters = inspect.signature(benchbackcompat.run).parameters
    assert set(parameters) - LOGGING == set(RunRequest.model_fields)
    assert parameters["workers"].default == 1 and RunRequest(scenarios="s", methods="m").workers == "auto"
    for name, field in RunRequest.model_fields.items():
        default = parameters[name].default
        if default is inspect.Parameter.empty or default is None or name == "workers":
            continue  # required, or None: the request's own default
        assert RunRequest.model_validate({"scenarios": "s", "methods": "m", name: default}) == \
            RunRequest(scenarios="s", methods="m"), name  # the API's default is the field's default


def test_a_command_line_gives_the_request_written_out_by_hand(tmp_path):
    argv = ["run", "--scenario", "ext-class,both", "--methods", "l2", "--preset", "cpu", "--seeds", "0-2,5",
            "--set", "train.epochs=3", "--set", "methods.l2.weight=0.5", "--grid", "methods.l2.weight=1,2",
            "--no-share", "--rerun", "l2", "--lock-timeout", "2.5", "--workers", "2", "--out", str(tmp_path),
            "--executor-param", "timeout_min=600", "--executor-param", "slurm_partition=gpu", "--channels-last", "off"]
    expected = RunRequest(scenarios=["ext-class", "both"], methods=["l2"], preset="cpu", seeds=[0, 1, 2, 5],
                          overrides={"train.epochs": 3, "methods.l2.weight": 0.5},
                          grids={"methods.l2.weight": [1, 2]}, share_models=False, rerun=["l2"], lock_timeout=2.5,
                          workers=2, out=Path(tmp_path), channels_last="off",
                          executor_params={"timeout_min": 600, "slurm_partition": "gpu"})
    assert run_request(build_parser().parse_args(argv)) == expected


def test_defaults_on_the_command_line_are_the_request_defaults():
    request = run_request(build_parser().parse_args(["run", "--scenario", "s", "--methods", "m"]))
    assert request == RunRequest(scenarios="s", methods="m")
