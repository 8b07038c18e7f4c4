"""Backbones, heads and networks: geometry of the fixed heads, head growth, shapes, parameter counts
(hand-computed where exact), name handling and checkpoints."""
from __future__ import annotations

import math

import pytest
import torch

from benchbackcompat.errors import BenchError, UnknownNameError
from benchbackcompat.models import (
    BACKBONES,
    CosineHead,
    FixedHead,
    LinearHead,
    build_network,
    count_parameters,
    create_backbone,
    dsimplex,
    dsimplex_frobenius,
    etf,
    list_backbones,
)
from benchbackcompat.models import timm_backbones

OUT_DIMS = {
    "resnet18": 512,
    "resnet18-imagenet": 512,
    "resnet20": 64,
    "resnet32": 64,
    "senet18": 512,
    "regnety400mf": 384,
    "lenetpp": 128,
    "convnet-s": 128,
    "convnet-m": 192,
}


def assert_simplex(w: torch.Tensor, k: int) -> None:
    """K unit rows, pairwise cosine -1/(K-1), columns summing to 0."""
    assert w.shape[0] == k
    assert torch.allclose(w.norm(dim=1), torch.ones(k), atol=1e-5)
    gram = w.double() @ w.double().T
    off = gram[~torch.eye(k, dtype=torch.bool)]
    assert torch.allclose(off, torch.full_like(off, -1 / (k - 1)), atol=1e-5, rtol=0)
    assert w.sum(0).abs().max() < 1e-4


# --- fixed heads -----------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [10, 1024])
def test_dsimplex_geometry(k):
    w = dsimplex(k)
    assert w.shape == (k, k - 1) and w.dtype == torch.float32
    assert_simplex(w, k)


def test_dsimplex_three_classes_by_hand():
    # T = [[1,0],[0,1],[v,v]], v = (1-sqrt 3)/2; centred and normalised: angles -15, 105, 225 degrees
    c, s, h = math.cos(math.radians(15)), math.sin(math.radians(15)), math.sqrt(0.5)
    expected = torch.tensor([[c, -s], [-s, c], [-h, -h]])
    assert torch.allclose(dsimplex(3), expected, atol=1e-6)
    assert torch.allclose(dsimplex(2), torch.tensor([[1.0], [-1.0]]), atol=1e-6)


def test_dsimplex_frobenius_variant():
    w = dsimplex_frobenius(100)
    # row norm sqrt((K-1)/K) / ||T||_F = sqrt(0.99) / sqrt(99 + ((10 - 1) / sqrt(99))^2) = 0.0996
    assert torch.allclose(w.norm(dim=1), torch.full((100,), 0.0996), atol=1e-4)
    assert torch.allclose(w / w.norm(dim=1, keepdim=True), dsimplex(100), atol=1e-5)


@pytest.mark.parametrize(("k", "dim"), [(10, None), (10, 16), (1024, None), (100, 160)])
def test_etf_geometry(k, dim):
    w = etf(k, dim)
    assert w.shape == (k, dim or k - 1)
    assert_simplex(w, k)
    assert torch.equal(w, etf(k, dim))  # the basis is seeded, not drawn from the global RNG


def test_etf_defaults_and_errors():
    assert torch.equal(etf(10), dsimplex(10))
    with pytest.raises(BenchError, match="dim >= 9"):
        etf(10, 8)


def test_fixed_head_is_a_buffer_without_grad():
    head = FixedHead(dsimplex(10))
    assert list(head.parameters()) == [] and "weight" in head.state_dict()
    f = torch.randn(4, 9, requires_grad=True)
    logits = head(f)
    assert torch.allclose(logits, f @ dsimplex(10).T)
    logits.sum().backward()
    assert head.weight.grad is None and not head.weight.requires_grad and f.grad is not None
    head.expand(10)  # within the pre-allocated classes: nothing changes
    with pytest.raises(BenchError, match="pre-allocates 10"):
        head.expand(11)


# --- learnable heads ------------------------------------------------------------------------------
def test_linear_head_expand_keeps_old_rows():
    head = LinearHead(8, 3)
    weight, bias = head.weight.detach().clone(), head.bias.detach().clone()
    head.expand(5)
    assert head.num_classes == 5 and head.weight.shape == (5, 8) and head.bias.shape == (5,)
    assert torch.equal(head.weight[:3], weight) and torch.equal(head.bias[:3], bias)
    assert head.weight[3:].abs().max() <= 1 / math.sqrt(8)  # nn.Linear's uniform bound
    assert {id(p) for p in head.parameters()} == {id(head.weight), id(head.bias)}
    with pytest.raises(BenchError, match="shrink"):
        head.expand(2)


def test_cosine_head_by_hand_and_expand():
    head = CosineHead(2, 2, scale=16.0)
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
    assert torch.allclose(head(torch.tensor([[3.0, 4.0]])), torch.tensor([[16 * 0.6, 16 * 0.8]]))
    head.expand(4)
    assert head.weight.shape == (4, 2) and torch.equal(head.weight[:2], torch.tensor([[1.0, 0.0], [0.0, 2.0]]))


# --- backbones ------------------------------------------------------------------------------------
def test_registry_lists_every_builtin():
    assert list_backbones() == sorted(OUT_DIMS) == sorted(BACKBONES)


@pytest.mark.parametrize("name", sorted(OUT_DIMS))
def test_backbone_shape_and_determinism(name):
    outputs = []
    for _ in range(2):
        torch.manual_seed(0)
        model = create_backbone(name).eval()
        torch.manual_seed(1)
        with torch.no_grad():
            outputs.append(model(torch.randn(2, 3, 32, 32)))
    assert model.out_dim == OUT_DIMS[name] and outputs[0].shape == (2, OUT_DIMS[name])
    assert torch.equal(outputs[0], outputs[1]) and outputs[0].isfinite().all()


@pytest.mark.parametrize("name", ["resnet18", "convnet-s", "lenetpp"])
def test_backbone_at_64px(name):
    model = create_backbone(name, image_size=64).eval()
    with torch.no_grad():
        assert model(torch.randn(2, 3, 64, 64)).shape == (2, OUT_DIMS[name])


def test_one_channel_and_lenet_toy_feature():
    lenet = create_backbone("lenetpp", in_chans=1, image_size=28, out_dim=2).eval()
    assert lenet.out_dim == 2 and lenet.fc.in_features == 128 * 3 * 3  # 28 -> 14 -> 7 -> 3
    assert lenet(torch.randn(2, 1, 28, 28)).shape == (2, 2)
    assert create_backbone("convnet-s", in_chans=1).eval()(torch.randn(2, 1, 32, 32)).shape == (2, 128)


def test_parameter_counts():
    counts = {name: count_parameters(create_backbone(name)) for name in OUT_DIMS}
    # ResNet-20 by hand: stem 432+32; stage 1: 3*(2*2304+64); stage 2: 13952 + 2*18560; stage 3: 55552 + 2*73984
    assert counts["resnet20"] == 464 + 14016 + 51072 + 203520 == 269_072  # He et al.: 0.27M
    assert counts["resnet32"] == 463_504  # 0.46M
    # torchvision resnet18 (11,689,512) without its fc (513,000); the CIFAR stem swaps 7x7 (9408) for 3x3 (1728)
    assert counts["resnet18-imagenet"] == 11_689_512 - 513_000 == 11_176_512
    assert counts["resnet18"] == 11_176_512 - 9408 + 1728
    assert 11e6 < counts["senet18"] < 11.5e6
    assert 5.5e6 < counts["regnety400mf"] < 6e6
    assert counts["convnet-s"] < 100_000 < counts["convnet-m"] < 250_000


# --- names, timm, checkpoints ---------------------------------------------------------------------
def test_unknown_builtin_suggests():
    with pytest.raises(UnknownNameError, match="Did you mean 'resnet18'"):
        create_backbone("resnet19")


def test_timm_backbone_without_weights():
    model = create_backbone("timm:resnet18").eval()
    assert model.out_dim == 512 and model(torch.randn(2, 3, 32, 32)).shape == (2, 512)
    vit = create_backbone("timm:vit_tiny_patch16_224", image_size=32).eval()  # built at 32x32 (4 patches)
    assert vit.out_dim == 192 and vit(torch.randn(2, 3, 32, 32)).shape == (2, 192)


def test_unknown_timm_name_suggests():
    with pytest.raises(UnknownNameError, match="Did you mean 'resnet18") as info:
        create_backbone("timm:resnet18x")
    assert "timm.list_models" in str(info.value)


def test_pretrained_weights_unavailable(monkeypatch):
    with pytest.raises(BenchError, match="no published weights"):
        create_backbone("resnet20", pretrained=True)

    def offline(*args, **kwargs):
        raise OSError("Name or service not known")

    monkeypatch.setattr(timm_backbones, "_cached_hf_weights", lambda name: None)
    monkeypatch.setattr(timm_backbones.socket, "getaddrinfo", offline)
    with pytest.raises(BenchError, match=r"timm/resnet18\.a1_in1k/resolve/main/model\.safetensors.*pretrained="):
        create_backbone("timm:resnet18", pretrained=True)


def test_local_checkpoint_round_trip(tmp_path):
    torch.manual_seed(0)
    source = build_network("resnet20", num_classes=5)
    path = tmp_path / "step0.pt"
    torch.save({"state_dict": source.state_dict()}, path)  # keys carry the "backbone." prefix
    loaded = create_backbone("resnet20", pretrained=str(path)).eval()
    x = torch.randn(2, 3, 32, 32)
    assert torch.equal(loaded(x), source.backbone.eval()(x))
    with pytest.raises(BenchError, match="does not fit"):
        create_backbone("resnet32", pretrained=path)
    with pytest.raises(BenchError, match="does not exist"):
        create_backbone("resnet20", pretrained=tmp_path / "missing.pt")


# --- networks -------------------------------------------------------------------------------------
def test_dsimplex_network():
    net = build_network("convnet-s", num_classes=10, head="dsimplex").eval()
    assert net.feature_dim == 9 and net.projection.bias is None
    out = net(torch.randn(3, 3, 32, 32))
    assert out.features.shape == (3, 9) and out.logits.shape == (3, 10)
    assert torch.allclose(out.logits, out.features @ dsimplex(10).T, atol=1e-6)
    assert count_parameters(net) == count_parameters(net.backbone) + 128 * 9  # the simplex is not a parameter
    frob = build_network("convnet-s", num_classes=10, head="dsimplex", head_kwargs={"variant": "frobenius"})
    assert torch.equal(frob.head.weight, dsimplex_frobenius(10))
    with pytest.raises(BenchError, match="fixes the feature size to 9"):
        build_network("convnet-s", num_classes=10, head="dsimplex", embedding_dim=16)


def test_other_heads():
    x = torch.randn(2, 3, 32, 32)
    linear = build_network("convnet-s", num_classes=7).eval()
    assert linear.feature_dim == 128 and linear.projection is None and linear(x).logits.shape == (2, 7)
    cosine = build_network("convnet-s", num_classes=7, head="cosine", embedding_dim=32, head_kwargs={"scale": 10.0})
    assert cosine.head.scale == 10.0 and cosine.projection.bias is not None and cosine.eval()(x).features.shape == (2, 32)
    fixed_etf = build_network("convnet-s", num_classes=7, head="etf", embedding_dim=32).eval()
    assert fixed_etf.head.weight.shape == (7, 32) and fixed_etf(x).logits.shape == (2, 7)
    bare = build_network("convnet-s", num_classes=7, head="none", embedding_dim=16).eval()
    out = bare(x)
    assert out.logits is None and torch.equal(out.features, bare.embed(x))
    with pytest.raises(UnknownNameError, match="Did you mean 'cosine'"):
        build_network("convnet-s", num_classes=7, head="cosin")
    with pytest.raises(BenchError, match="head_kwargs"):
        build_network("convnet-s", num_classes=7, head="linear", head_kwargs={"scale": 3.0})
