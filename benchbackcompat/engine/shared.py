"""Shared models: the models a cell trains once for every cell alike, or loads (standard old models, the references
of P_com/P_up and of update gains, models pretrained elsewhere), and their keys.

A shared model does not depend on the method under test; it is keyed by what its training reads (recipe, step,
training and model configuration, the training data's configuration and content, the core's results version and
the code behind ``build_model``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchbackcompat.cell import keyed_config
from benchbackcompat.config import config_hash
from benchbackcompat.scenarios.kinds import ScenarioBase
from benchbackcompat.identity import RESULTS_VERSION, source_hash, source_packages
from benchbackcompat.method import Method, StandardRecipe
from benchbackcompat.scenarios.data import ScenarioData
from benchbackcompat.scenarios.steps import Step

PRETRAIN_SEED = 0  # models pretrained elsewhere do not depend on the cell's seed


def build_code_hash(method: Method) -> str:
    """Source hash of the non-core packages behind ``method.build_model`` (its shared models depend on it)."""
    owner = next(c for c in type(method).__mro__ if "build_model" in vars(c))
    return source_hash(source_packages(owner, within=Method))


def standard_recipe(method: Method) -> StandardRecipe:
    """Plain cross-entropy training with ``method``'s model, head and retrieval: its shared models."""
    return StandardRecipe(method)


@dataclass(frozen=True)
class SharedModel:
    """A model that does not depend on the method under test, trained by ``recipe`` for ``step`` and stored under
    ``key``; its time is recorded under ``label`` (standard-0, pretrained-0, reference-1, upper-2)."""

    label: str
    recipe: Method
    step: Step
    key: str


def is_standard(method: Method, step: Step) -> bool:
    """Whether ``method`` trains ``step`` with its standard recipe, as a shared model (``Method.standard_steps``)."""
    kind = method.standard_steps
    return step.init != "pretrained" and (kind == "all" or (kind == "first" and step.index == 0))


def reference_recipe(method: Method) -> Method:
    """The recipe of the independently trained new model of P_com/P_up: the one that trained the
    method's old model (its standard recipe), or for a method that trains its own old model
    (``standard_steps = "none"``) ``method.reference()``, which must be its step-0 objective."""
    if method.standard_steps == "none":
        return method.reference()
    return standard_recipe(method)


CLASS_ORDER_FIELDS = ("class_order_seed", "order_by_seed")  # data fields that only order the training classes


def shared_key(kind: str, recipe: Method, step: Step, train_cfg, scenario: ScenarioBase, data: ScenarioData,
               pretraining: bool = False, **fields: Any) -> str:
    """A shared model's key: what its training reads (recipe, step, training and model configuration, the training
    data's configuration and content, not its path), the core's results version and the code behind
    ``build_model``, plus ``fields`` (seed, ...). ``pretraining``: a model trained on the pretraining pool alone,
    keyed by that pool's content and without the training classes' order, which it never reads."""
    data_config = keyed_config(scenario.as_trained())["data"]
    if pretraining:
        data_config = {k: v for k, v in data_config.items() if k not in CLASS_ORDER_FIELDS}
    return config_hash({
        "kind": kind, "recipe": recipe.model_key(), "step": step.to_dict(),
        "train": train_cfg.model_dump(mode="json"), "model": scenario.model.model_dump(mode="json"),
        "data": data_config, "data_sha256": data.pretrain_fingerprint if pretraining else data.training_fingerprint,
        "results_version": RESULTS_VERSION, "build_code": build_code_hash(getattr(recipe, "code_owner", recipe)),
        **fields,
    })


def standard_model(method: Method, step: Step, scenario: ScenarioBase, data: ScenarioData, seed: int,
                   cell_key: str | None = None, recipe: Method | None = None, label: str | None = None) -> SharedModel:
    """Step ``step`` trained alone with ``recipe`` (default: ``method``'s standard recipe), seed ``seed``; keyed to
    the cell ``cell_key`` alone when given (sharing off)."""
    recipe = recipe or standard_recipe(method)
    key = shared_key("standard", recipe, step, scenario.train_config(step.index), scenario, data,
                     seed=seed, classes=None, cell=cell_key)
    return SharedModel(label or f"standard-{step.index}", recipe, step, key)


def pretrained_elsewhere(method: Method, step: Step, scenario: ScenarioBase, data: ScenarioData) -> SharedModel:
    """The model "pretrained elsewhere" that step ``step`` starts from: ``method.reference()`` on the first classes
    of the pretraining pool, one for every seed (PRETRAIN_SEED, whatever class order the cell's seed draws) and
    every cell."""
    spec, recipe = step.pretrained, method.reference()
    pretrain_step = Step(spec.index, (0, spec.num_classes), spec.num_classes, 1.0, spec.backbone, "scratch")
    key = shared_key("pretrained", recipe, pretrain_step, scenario.pretrain, scenario, data, pretraining=True,
                     seed=PRETRAIN_SEED)
    return SharedModel(f"pretrained-{spec.index}", recipe, pretrain_step, key)


def reference_models(method: Method, steps: list[Step], scenario: ScenarioBase, data: ScenarioData, seed: int,
                     cell_key: str | None = None) -> list[SharedModel]:
    """The models trained alone with ``reference_recipe`` that the cell's metrics divide by: a single update's
    reference (the new model of P_com/P_up), a sequence's upper bounds of its update gains (one per later step)."""
    recipe = reference_recipe(method)
    if scenario.single_update:
        chosen, name = steps[1:2], "reference"
    elif scenario.reports_update_gain():
        chosen, name = steps[1:], "upper"
    else:
        return []
    return [standard_model(method, step, scenario, data, seed, cell_key, recipe, f"{name}-{step.index}")
            for step in chosen]


def shared_models(method: Method, steps: list[Step], scenario: ScenarioBase, data: ScenarioData, seed: int,
                  cell_key: str | None = None) -> list[SharedModel]:
    """Every shared model a cell of ``method`` trains or loads, in the order it needs them: its standard steps, the
    models pretrained elsewhere that its steps start from, then the references of its metrics."""
    models = []
    for step in steps:
        if step.init == "zoo":
            continue
        if is_standard(method, step):
            models.append(standard_model(method, step, scenario, data, seed, cell_key))
        elif step.init == "pretrained":
            models.append(pretrained_elsewhere(method, step, scenario, data))
    return models + reference_models(method, steps, scenario, data, seed, cell_key)
