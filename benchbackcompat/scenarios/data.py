"""The images of a scenario: class order, per-step training subsets, replay memory, evaluation sets."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from benchbackcompat.config import DataConfig, ValidationSplit
from benchbackcompat.scenarios.kinds import ScenarioBase
from benchbackcompat.data.arrays import DatasetBundle, ImageArrays
from benchbackcompat.data.registry import DatasetRequest, check_not_degenerate, load_dataset
from benchbackcompat.errors import BenchError
from benchbackcompat.runtime.logs import log
from benchbackcompat.identity import tensor_fingerprint
from benchbackcompat.scenarios.steps import Step
from benchbackcompat.runtime.seeds import derive_seed, generator

SINGLE_SET_PROTOCOLS = ("loo", "verification")  # one evaluation set, encoded by both models


@dataclass
class ScenarioData:
    """Device-resident images of one scenario, labels in the scenario's class order."""

    train: ImageArrays
    query: ImageArrays  # evaluation queries (for leave-one-out: the whole evaluation set)
    gallery: ImageArrays | None  # None: leave-one-out on ``query``
    pretrain: ImageArrays | None
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    image_size: int
    num_classes: int
    name: str
    eval_stats: tuple[tuple[float, float, float], tuple[float, float, float]] | None = None  # (mean, std) of query and
    # gallery when they differ from the training data's (eval_normalisation = "eval"); None: mean, std
    fingerprint: str = ""  # SHA-256 of the images and labels above (content, not path): part of cell keys
    training_fingerprint: str = ""  # the same of the training and pretraining images alone: part of the trained models' keys
    pretrain_fingerprint: str = ""  # the same of the pretraining images alone: part of the pretrained models' keys
    # (the class order a seed draws reorders the training images, not the pretraining pool)
    source_fingerprint: str = ""  # the same of the dataset as loaded, before a seed orders or splits it: one for every seed

    @property
    def query_stats(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        """(mean, std) that query and gallery images are normalised with: ``eval_stats``, else the training data's."""
        return self.eval_stats or (self.mean, self.std)

    def step_data(self, step: Step, seed: int) -> ImageArrays:
        """Images of the classes ``step.classes``; a seeded random ``data_fraction`` of them if below 1."""
        start, stop = step.classes
        index = torch.nonzero((self.train.labels >= start) & (self.train.labels < stop)).flatten()
        if step.data_fraction < 1:
            keep = max(1, round(len(index) * step.data_fraction))
            order = torch.randperm(len(index), generator=generator(derive_seed(seed, "subset", step.index)))
            index = index[order[:keep].to(index.device)].sort().values
        return self.train.subset(index)

    def pretrain_data(self, num_classes: int) -> ImageArrays:
        if self.pretrain is None:
            raise BenchError(f"dataset {self.name!r} has no pretraining pool; iam-cl2r needs one (the embedded dataset has it)")
        available = int(self.pretrain.labels.max()) + 1
        if num_classes > available:
            raise BenchError(
                f"a pretrained model needs {num_classes} pretraining classes but {self.name!r} has {available}; "
                "lower pretrain_classes or raise data.pretrain_classes"
            )
        return self.pretrain.subset(torch.nonzero(self.pretrain.labels < num_classes).flatten())


def select_memory(labels: Tensor, classes: tuple[int, int], per_class: int, seed: int) -> Tensor:
    """Indices of ``per_class`` random images of each class in ``[start, stop)`` (CL2R: random selection)."""
    start, stop = classes
    candidates = torch.nonzero((labels >= start) & (labels < stop)).flatten().cpu()
    if per_class == 0 or len(candidates) == 0:
        return candidates[:0]
    shuffled = candidates[torch.randperm(len(candidates), generator=generator(seed))]
    by_class = shuffled[torch.sort(labels[shuffled].cpu(), stable=True).indices]
    sorted_labels = labels[by_class].cpu()
    first = torch.searchsorted(sorted_labels, sorted_labels, side="left")
    rank = torch.arange(len(by_class)) - first
    return by_class[rank < per_class].sort().values


def per_class_sample(labels: Tensor, fraction: float, seed: int) -> Tensor:
    """Sorted indices of a seeded random ``round(fraction * n_c)`` images of every class c (at least 1, at most
    n_c - 1), drawn independently of any other split: the validation part of a training set."""
    labels = labels.cpu()
    shuffled = torch.randperm(len(labels), generator=generator(seed))
    by_class = shuffled[torch.sort(labels[shuffled], stable=True).indices]
    sorted_labels = labels[by_class]
    first = torch.searchsorted(sorted_labels, sorted_labels, side="left")
    count = torch.searchsorted(sorted_labels, sorted_labels, side="right") - first
    rank = torch.arange(len(by_class)) - first
    quota = torch.minimum(torch.round(count * fraction).clamp(min=1), (count - 1).clamp(min=1))
    return by_class[rank < quota].sort().values


def validation_sets(train: ImageArrays, split: ValidationSplit, two_sets: bool) -> tuple[ImageArrays, ImageArrays, ImageArrays | None]:
    """(training minus validation, query, gallery) carved from the training images only. A protocol with one
    evaluation set (leave-one-out, verification) gets the validation images as query and no gallery; one with
    two sets gets every validation class split in halves (query: the first half of a seeded draw)."""
    held = torch.zeros(len(train.labels), dtype=torch.bool)
    held[per_class_sample(train.labels, split.fraction, derive_seed(split.seed, "validation"))] = True
    rest, validation = train.subset(~held), train.subset(held)
    if not two_sets:
        return rest, validation, None
    query = torch.zeros(len(validation.labels), dtype=torch.bool)
    query[per_class_sample(validation.labels, 0.5, derive_seed(split.seed, "validation-query"))] = True
    return rest, validation.subset(query), validation.subset(~query)


def _request(cfg: DataConfig, cache_dir: Path) -> DatasetRequest:
    return DatasetRequest(
        cache_dir=cache_dir,
        root=cfg.root,
        num_classes=cfg.num_classes,
        train_per_class=cfg.train_per_class,
        test_per_class=cfg.test_per_class,
        image_size=cfg.image_size,
        seed=cfg.seed,
        open_classes=cfg.open_classes,
        pretrain_classes=cfg.pretrain_classes,
        pretrain_per_class=cfg.pretrain_per_class,
        pretrain_resolution=cfg.pretrain_resolution,
        pretrain_saturation=cfg.pretrain_saturation,
    )


def _reorder(arrays: ImageArrays, order: Tensor) -> ImageArrays:
    """Relabel so that class ``order[i]`` becomes class ``i``."""
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(len(order))
    return ImageArrays(arrays.images, inverse[arrays.labels])


def load_scenario_data(scenario: ScenarioBase, cache_dir: Path, device: torch.device) -> ScenarioData:
    """Load the scenario's datasets (decoded once, cached as uint8) and move them to ``device``."""
    cfg = scenario.data
    request = _request(cfg, cache_dir)
    bundle: DatasetBundle = load_dataset(cfg.name, request)
    check_not_degenerate(cfg.name, bundle, request)
    train, test = bundle.splits["train"], bundle.splits["test"]
    source = _fingerprint((train, test, bundle.splits.get("pretrain")), (bundle.mean, bundle.std, bundle.num_classes))
    if cfg.class_order_seed is not None:
        order = torch.randperm(bundle.num_classes, generator=generator(cfg.class_order_seed))
        train, test = _reorder(train, order), _reorder(test, order)
    eval_stats = None
    if cfg.validation is not None:  # a selection run: the test and open-set images are never used
        train, query, gallery = validation_sets(train, cfg.validation, scenario.protocol not in SINGLE_SET_PROTOCOLS)
    elif scenario.eval_split == "test":
        query, gallery = test, None
        if scenario.protocol not in SINGLE_SET_PROTOCOLS:
            raise BenchError(f"protocol {scenario.protocol!r} needs separate query and gallery sets: set eval_split = \"open\"")
    else:
        query, gallery, eval_stats = _open_set(cfg, bundle, cache_dir)
        if scenario.protocol in SINGLE_SET_PROTOCOLS:  # one set: an eval_dataset's test split (CoReS: "We do not
            query, gallery = (gallery if cfg.eval_dataset is not None else query), None  # use the training-set of CIFAR-10")
    pretrain = bundle.splits.get("pretrain")
    stats = (bundle.mean, bundle.std, bundle.num_classes)
    fingerprint = _fingerprint((train, query, gallery, pretrain), stats + ((eval_stats,) if eval_stats else ()))
    log.info(f"data {bundle.name}: {bundle.num_classes} classes, {len(train)} training, {len(query)} query"
             + (f", {len(gallery)} gallery" if gallery is not None else "") + f" images on {device}")
    return ScenarioData(
        train=train.to(device),
        query=query.to(device),
        gallery=gallery.to(device) if gallery is not None else None,
        pretrain=pretrain.to(device) if pretrain is not None else None,
        mean=bundle.mean,
        std=bundle.std,
        image_size=bundle.image_size,
        num_classes=bundle.num_classes,
        name=bundle.name,
        eval_stats=eval_stats,
        fingerprint=fingerprint,
        training_fingerprint=_fingerprint((train, pretrain), stats),
        pretrain_fingerprint=_fingerprint((pretrain,), stats),
        source_fingerprint=source,
    )


def _fingerprint(sets: tuple[ImageArrays | None, ...], extra: tuple) -> str:
    return tensor_fingerprint([t for s in sets for t in ((s.images, s.labels) if s else (None, None))], extra=extra)


def _open_set(cfg: DataConfig, bundle: DatasetBundle, cache_dir: Path) -> tuple[ImageArrays, ImageArrays, tuple | None]:
    """Open-set evaluation images: ``eval_dataset``'s train (query) and test (gallery) splits, as in
    IAM-CL2R (CIFAR-10 train / test), or the dataset's own open-set pool; and the (mean, std) to normalise
    them with when ``eval_normalisation = "eval"`` (else None: the training data's)."""
    if cfg.eval_dataset is not None:
        request = DatasetRequest(cache_dir=cache_dir, root=cfg.root, image_size=bundle.image_size)
        other = load_dataset(cfg.eval_dataset, request)
        stats = (other.mean, other.std) if cfg.eval_normalisation == "eval" else None
        return other.splits["train"], other.splits["test"], stats
    if "open_query" not in bundle.splits:
        raise BenchError(
            f"dataset {bundle.name!r} has no open-set pool; set data.eval_dataset (e.g. cifar10-jpeg) or eval_split = \"test\""
        )
    return bundle.splits["open_query"], bundle.splits["open_gallery"], None
