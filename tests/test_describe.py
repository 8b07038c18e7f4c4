"""Discovering a method's hyperparameters: describe, list methods --params, --dry-run with defaults."""
from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from benchbackcompat.cli import main
from benchbackcompat.report.describe import parameter_rows
from benchbackcompat.method import MethodParams


class ExampleParams(MethodParams):
    weight: float = Field(0.5, ge=0, lt=1, description="lambda")
    mode: Literal["a", "b"] = "a"
    size: int | None = Field(None, gt=2)


def test_parameter_rows_read_type_default_range_and_description():
    assert parameter_rows(ExampleParams) == [
        {"name": "weight", "type": "float", "default": "0.5", "range": ">= 0, < 1", "description": "lambda"},
        {"name": "mode", "type": "'a' | 'b'", "default": "'a'", "range": "", "description": ""},
        {"name": "size", "type": "int | None", "default": "None", "range": "> 2", "description": ""},
    ]


def test_describe_hoc_lists_hyperparameters_paper_and_scenarios(capsys):
    assert main(["describe", "hoc"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "paper: d-Simplex-HOC (Biondi et al., CVPR'24" in out
    lam = next(line for line in lines if line.startswith("lam "))
    assert lam.split()[:5] == ["lam", "float", "0.1", ">=", "0,"] and "weight of the cross-entropy" in lam
    assert any(line.startswith("negatives ") and "'official' | 'paper' | 'infonce'" in line for line in lines)
    assert "  cl2r (cl2r): supported" in lines


def test_describe_names_unsupported_scenarios_and_unknown_methods(capsys):
    assert main(["describe", "psp"]) == 0
    assert "  cl2r (cl2r): not supported: psp trains every model alone" in capsys.readouterr().out
    assert main(["describe", "hocc"]) == 2
    assert "unknown method 'hocc'. Did you mean 'hoc'?" in capsys.readouterr().err


def test_list_methods_params_and_dry_run_show_defaults(capsys):
    assert main(["list", "methods", "--params"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| lwf "))
    assert "weight=1.0; target='old-head'; temperature=None" in row
    assert main(["run", "--scenario", "ext-class", "--methods", "lwf,hoc", "--set", "methods.lwf.weight=3", "--dry-run"]) == 0
    resolved, _ = json.JSONDecoder().raw_decode(capsys.readouterr().out)
    assert resolved["method_params"]["lwf"] == {"weight": 3.0, "target": "old-head", "temperature": None}
    assert resolved["method_params"]["hoc"] == {"lam": 0.1, "rho": None, "negatives": "official", "classes": None,
                                                "simplex": "unit"}


def test_a_misspelt_hyperparameter_points_at_describe(capsys):
    assert main(["run", "--scenario", "ext-class", "--methods", "lwf", "--set", "methods.lwf.wieght=3", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "wieght: unknown key, did you mean weight? (known: weight, target, temperature;" in err and "benchbackcompat describe METHOD" in err
