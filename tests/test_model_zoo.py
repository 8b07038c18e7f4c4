"""The model-zoo scenario: already-trained classifiers split into encoder and classifier, weights from a
local file or the libraries' caches (a one-line error when missing offline), and an end-to-end run
with randomly initialised small models scored with encoder features, PSP and LSP."""
from __future__ import annotations

import socket

import pytest
import torch

from benchbackcompat.errors import BenchError
from benchbackcompat.models import timm_backbones
from benchbackcompat.models.network import Network
from benchbackcompat.models.zoo import IMAGENET_MEAN, IMAGENET_STD, Renormalise, create_zoo_model
from benchbackcompat.store import ResultStore

DATA_STATS = ((0.5, 0.4, 0.3), (0.25, 0.2, 0.3))


def zoo(name: str, pretrained=False, classes: int = 10, stats=DATA_STATS, size: int = 32) -> Network:
    torch.manual_seed(0)
    return create_zoo_model(name, num_classes=classes, image_size=size, in_chans=3, pretrained=pretrained, data_stats=stats)


@pytest.mark.parametrize(("name", "size"), [("torchvision:resnet18", 32), ("torchvision:mobilenet_v3_small", 32), ("timm:resnet10t", 32)])
def test_library_models_split_into_encoder_and_their_own_classifier(name, size):
    import timm
    import torchvision.models as tvm

    torch.manual_seed(0)
    arch = name.split(":")[1]
    full = tvm.get_model(arch, num_classes=10) if name.startswith("torchvision") else timm.create_model(arch, num_classes=10)
    model = zoo(name, size=size).eval()
    x = torch.randn(2, 3, size, size)
    with torch.no_grad():
        out = model(x)
        torch.testing.assert_close(out.logits, full.eval()(x))
    assert out.features.shape == (2, model.head.in_features) == (2, model.feature_dim)
    assert out.logits.shape == (2, 10)
    if arch == "mobilenet_v3_small":
        assert model.feature_dim == 1024  # the input of the last layer of its two-layer classifier


def test_local_checkpoint_of_a_whole_classifier_is_loaded(tmp_path):
    import torchvision.models as tvm

    torch.manual_seed(1)
    saved = tvm.get_model("resnet18", num_classes=10).eval()
    path = tmp_path / "resnet18.pth"
    torch.save(saved.state_dict(), path)
    x = torch.randn(2, 3, 32, 32)
    loaded = zoo("torchvision:resnet18", pretrained=str(path), stats=(IMAGENET_MEAN, IMAGENET_STD)).eval()
    with torch.no_grad():
        torch.testing.assert_close(loaded(x).logits, saved(x))
    builtin = zoo("convnet-s").eval()
    torch.save(builtin.state_dict(), tmp_path / "convnet.pt")
    reloaded = create_zoo_model("convnet-s", num_classes=10, image_size=32, in_chans=3, pretrained=tmp_path / "convnet.pt",
                                data_stats=DATA_STATS).eval()
    with torch.no_grad():
        torch.testing.assert_close(reloaded(x).logits, builtin(x).logits)


def test_renormalise_maps_the_data_normalisation_to_the_models():
    images = torch.rand(2, 3, 4, 4)
    as_data = (images - torch.tensor(DATA_STATS[0]).view(1, 3, 1, 1)) / torch.tensor(DATA_STATS[1]).view(1, 3, 1, 1)
    as_model = (images - torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)) / torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    torch.testing.assert_close(Renormalise(DATA_STATS, (IMAGENET_MEAN, IMAGENET_STD))(as_data), as_model)


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network and empty weight caches."""
    def unreachable(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(socket, "getaddrinfo", unreachable)
    monkeypatch.setattr(timm_backbones, "_cached_hf_weights", lambda name: None)
    previous = torch.hub.get_dir()
    torch.hub.set_dir(str(tmp_path / "hub"))
    yield tmp_path / "hub" / "checkpoints"
    torch.hub.set_dir(previous)


def test_missing_torchvision_weights_offline_name_the_file_and_where_to_put_it(offline):
    with pytest.raises(BenchError) as error:
        zoo("torchvision:resnet50.IMAGENET1K_V1", pretrained=True, classes=1000)
    message = str(error.value)
    assert "\n" not in message
    assert "https://download.pytorch.org/models/resnet50-0676ba61.pth" in message
    assert str(offline / "resnet50-0676ba61.pth") in message and 'weights."torchvision:resnet50.IMAGENET1K_V1"' in message


def test_missing_timm_weights_offline_name_the_file(offline):
    with pytest.raises(BenchError) as error:
        zoo("timm:resnet10t", pretrained=True, classes=1000)
    message = str(error.value)
    assert "\n" not in message and "model.safetensors" in message and 'weights."timm:resnet10t"' in message


def test_bad_zoo_names_and_class_counts_fail_with_one_line():
    with pytest.raises(BenchError, match="unknown torchvision model 'resnet5'"):
        zoo("torchvision:resnet5")
    with pytest.raises(BenchError, match="unknown weights of torchvision model 'resnet50' 'V9'"):
        zoo("torchvision:resnet50.V9", pretrained=True, classes=1000)
    with pytest.raises(BenchError, match="classify 1000 classes, not 10; set classes = 1000"):
        zoo("torchvision:resnet18", pretrained=True, classes=10)
    with pytest.raises(BenchError, match="no published weights"):
        zoo("convnet-s", pretrained=True)


@pytest.mark.slow
def test_model_zoo_scenario_scores_encoder_features_psp_and_lsp(tmp_path):
    from benchbackcompat.cli import main

    tiny = ["--set", "data.num_classes=6", "--set", "data.train_per_class=4", "--set", "data.test_per_class=12",
            "--set", 'zoo=["convnet-s","convnet-m","torchvision:resnet18"]', "--set", "classes=30"]
    assert main(["run", "--out", str(tmp_path), "--scenario", "model-zoo", "--methods", "independent,psp,lsp", *tiny]) == 0
    records = {r.method: r for r in ResultStore(tmp_path).records()}
    assert all(r.status == "finished" for r in records.values())
    for method in ("psp", "lsp"):  # every model has 30 outputs: all six entries are computed
        C = records[method].matrices["cmc@1"]
        assert not records[method].notes and all(0 <= C[t][k] <= 100 for t in range(3) for k in range(t + 1))
    # encoder features: 128-d, 192-d and 512-d, so no cross-test is defined
    notes = records["independent"].notes
    assert len(notes) == 3 and all("feature sizes differ" in n for n in notes)
    # random zoo models are seeded: a second run builds the same models and gives the same matrix
    assert main(["run", "--out", str(tmp_path / "again"), "--scenario", "model-zoo", "--methods", "lsp", *tiny]) == 0
    (again,) = ResultStore(tmp_path / "again").records()
    assert again.matrices == records["lsp"].matrices
