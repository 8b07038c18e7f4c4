"""The study's claims files (studies/cpu-scale/claims/*.toml), read as plain TOML: every quoted number against a
transcription of the papers' tables typed here once, every effect against the paper's numbers, every deciding scenario
against the cpu preset, every method and implementation test against the installed code."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import preset_scenarios, resolve_run
from benchbackcompat.overrides import format_override

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted((ROOT / "studies" / "cpu-scale" / "claims").glob("*.toml"))
CLAIMS = [(path.name, claim) for path in FILES for claim in tomllib.loads(path.read_text())["claim"]]


def _claim(claim_id: str) -> dict:
    return next(claim for _, claim in CLAIMS if claim["id"] == claim_id)


# ------------------------------------------------------------------ the papers' tables, transcribed once
X = 0.0  # "×": compatibility not achieved (the journal version of Stationary Representations prints 0)
IAM_TABLE1 = {  # Stationary Representations (CVPR 2024), Table 1, CIFAR100R/10: AC 7, AA_7, AC 31, AA_31
    "ER baseline": (X, 36.22, None, 31.30), "FAN": (X, 36.32, None, 30.79), "BCT-ER": (X, 35.59, X, 29.88),
    "LCE-ER": (X, 34.89, X, 29.30), "AdvBCT-ER": (X, 35.73, X, 30.10), "CVS": (X, 36.31, 0.01, 31.34),
    "d-Simplex-FD": (0.05, 56.58, 0.21, 56.27), "d-Simplex-HOC": (0.95, 68.13, 0.65, 67.40)}
CL2R_TABLE2 = {  # journal version, Table II, CIFAR100/10: (AC, AA, ACA) at 7, 16 and 31 tasks
    "ER baseline": {7: (0.1905, 46.75, 7.789), 16: (0.04167, 44.905, 1.69), 31: (0.01935, 40.776, 0.9265)},
    "FAN": {7: (0.1429, 47.587, 5.631), 16: (0.15, 46.098, 6.691), 31: (0.07312, 43.124, 3.419)},
    "BCT-ER": {7: (0.09524, 46.818, 3.475), 16: (0, 43.632, 0), 31: (0.008602, 41.964, 0.4014)},
    "LCE-ER": {7: (0.2381, 45.147, 10.383), 16: (0.2833, 41.982, 12.607), 31: (0.1419, 38.446, 5.931)},
    "AdvBCT-ER": {7: (0, 35.656, 0), 16: (0.008333, 34.888, 0.3899), 31: (0.02366, 33.928, 1.04)},
    "CVS": {7: (0.2857, 51.69, 12.697), 16: (0.1333, 49.38, 5.647), 31: (0.06882, 46.33, 2.928)},
    "d-Simplex-FD": {7: (0.38, 49.67, 17.31), 16: (0.45, 48.42, 21.32), 31: (0.34, 44.822, 15.37)},
    "d-Simplex-HOC": {7: (0.86, 48.211, 42.41), 16: (0.90, 47.56, 43.20), 31: (0.49, 47.34, 23.44)}}
HBCT_TABLE1 = {  # HBCT (ICML 2025), Table 1, P_com: ℓ2, BCT, Hot-Refresh, AdvBCT, HOC, HBCT w/o entail, HBCT
    ("Ext-data", "CIFAR100", "CMC@1"): (0.510, 0.900, 0.693, 0.760, 0.685, 0.847, 0.956),
    ("Ext-data", "CIFAR100", "mAP"): (0.355, 0.406, 0.396, 0.389, 0.396, 0.547, 0.560),
    ("Ext-data", "TinyImageNet", "CMC@1"): (0.603, 0.702, 0.610, 0.286, 0.610, 0.966, 1.076),
    ("Ext-data", "TinyImageNet", "mAP"): (0.362, 0.354, 0.369, 0.227, 0.377, 0.539, 0.572),
    ("Ext-class", "CIFAR100", "CMC@1"): (0.302, 0.210, 0.360, 0.244, 0.336, 0.435, 0.495),
    ("Ext-class", "CIFAR100", "mAP"): (0.093, 0.054, 0.110, 0.080, 0.106, 0.176, 0.209),
    ("Ext-class", "TinyImageNet", "CMC@1"): (0.127, 0.073, 0.229, -0.070, 0.258, 0.177, 0.295),
    ("Ext-class", "TinyImageNet", "mAP"): (0.071, 0.029, 0.094, 0.007, 0.102, 0.120, 0.169),
    ("New-Arch", "CIFAR100", "CMC@1"): (0.343, 0.623, 0.517, 0.449, 0.534, -0.178, 0.937),
    ("New-Arch", "CIFAR100", "mAP"): (0.337, 0.432, 0.402, 0.374, 0.408, 0.099, 0.555),
    ("New-Arch", "TinyImageNet", "CMC@1"): (0.593, 0.794, 0.656, 0.423, 0.655, 0.941, 0.982),
    ("New-Arch", "TinyImageNet", "mAP"): (0.346, 0.384, 0.356, 0.294, 0.354, 0.475, 0.500),
    ("Both", "CIFAR100", "CMC@1"): (0.185, -0.054, 0.202, 0.245, 0.116, -0.487, 0.324),
    ("Both", "CIFAR100", "mAP"): (0.119, 0.053, 0.122, 0.111, 0.110, -0.204, 0.154),
    ("Both", "TinyImageNet", "CMC@1"): (0.321, 0.233, 0.365, 0.255, 0.247, -0.201, 0.348),
    ("Both", "TinyImageNet", "mAP"): (0.137, 0.115, 0.143, 0.126, 0.126, -0.057, 0.184)}
HBCT_ROWS = ("ℓ2", "BCT", "Hot-Refresh", "AdvBCT", "HOC", "HBCT w/o entail", "HBCT")
HBCT_P_UP = {("Ext-data", "HBCT"): -0.002, ("Ext-data", "BCT"): -0.014, ("Ext-class", "HBCT"): -0.001,
             ("Ext-class", "BCT"): -0.029}  # CIFAR100, CMC@1
PSP_TABLE1A_5 = {  # The Probability Simplex is Compatible, Table 1(a), CIFAR100, 5 steps: AC, AA, ACA
    "Baseline": (0, 13.60, 0), "BCT": (0.40, 29.93, 11.78), "CoReS": (0, 29.63, 0), "ETF-CE": (0, 27.26, 0),
    "ETF-DR": (0, 24.66, 0), "LCE": (0.10, 32.63, 4.63), "AdvBCT": (0.40, 26.13, 11.67), "PSP": (0.90, 26.04, 21.76),
    "LSP": (0.70, 30.36, 21.91)}
LITERAL = {  # claim id -> {name: number as printed}, for the entries read off the text rather than a large table
    "cl2r16-lambda1-not-compatible": {"λ = 1 (L_sce) AC": 0, "λ = 0.10 AC": 0.90},
    "cl2r16-lambda-hoc-ac-above-lambda1": {"λ = 0.10 AC": 0.90, "λ = 1 (L_sce) AC": 0},
    "cl2r16-lambda-0.1-best-aca": {"λ = 0 (L_ince)": 40.706, "λ = 0.05": 41.62, "λ = 0.10": 43.20, "λ = 0.25": 13.616,
                                   "λ = 0.50": 15.825, "λ = 1 (L_sce)": 0},
    "iam31-new-architectures": {"d-Simplex-HOC AC": 0.58, "d-Simplex-FD AC": 0.34, "d-Simplex-HOC AA": 71.40,
                                "d-Simplex-FD AA": 57.58},
    "cl2r7-tinyimagenet-hoc-above-each": {"d-Simplex-HOC AC": 0.81, "d-Simplex-FD AC": 0.14, "d-Simplex-HOC ACA": 25.96,
                                          "d-Simplex-FD ACA": 4.43},
    "cl2r16-tinyimagenet-hoc-above-each": {"d-Simplex-HOC AC": 0.82, "CVS AC": 0.05, "d-Simplex-HOC ACA": 26.72,
                                           "CVS ACA": 1.62},
    "cl2r31-tinyimagenet-hoc-above-each": {"d-Simplex-HOC AC": 0.77, "LCE-ER AC": 0.02151, "d-Simplex-HOC ACA": 25.14,
                                           "d-Simplex-FD ACA": 0.44},
    "cl2r7-cub-hoc-above-each": {"d-Simplex-HOC AC": 0.90, "d-Simplex-FD AC": 0.86, "d-Simplex-HOC ACA": 37.72,
                                 "d-Simplex-FD ACA": 35.08},
    "cl2r16-cub-hoc-above-each": {"d-Simplex-HOC AC": 0.73, "d-Simplex-FD AC": 0.60, "d-Simplex-HOC ACA": 30.01,
                                  "d-Simplex-FD ACA": 24.03},
    "cl2r31-cub-hoc-above-each": {"d-Simplex-HOC AC": 0.60, "d-Simplex-FD AC": 0.55, "d-Simplex-HOC ACA": 25.46,
                                  "d-Simplex-FD ACA": 21.97},
    "cores1-cores-compatible": {"old self-test": 0.60, "CoReS cross-test": 0.61},
    "cores1-bct-compatible": {"old self-test": 0.60, "BCT cross-test": 0.60},
    "cores1-update-gain-above-bct": {"CoReS Γ (%)": 21.3, "BCT Γ (%)": 5.9},
    "cores1-independent-not-compatible": {"old self-test": 0.60, "ITM cross-test (×)": 0.12},
    "cores1-l2-not-compatible": {"old self-test": 0.60, "ℓ2 cross-test (×)": 0.35},
    "cores1-ift-not-compatible": {"old self-test": 0.60, "IFT cross-test (×)": 0.57},
    "cores1-lwf-not-compatible": {"old self-test": 0.60, "LwF cross-test (×)": 0.59},
    "cores2-ac-above-bct": {"CoReS (ϕ1, ϕ1)": 0.59, "CoReS (ϕ2, ϕ1)": 0.61, "CoReS (ϕ3, ϕ1)": 0.60, "CoReS (ϕ2, ϕ2)": 0.63,
                            "CoReS (ϕ3, ϕ2)": 0.61, "BCT (ϕ1, ϕ1)": 0.59, "BCT (ϕ2, ϕ1)": 0.59, "BCT (ϕ3, ϕ1)": 0.58,
                            "BCT (ϕ2, ϕ2)": 0.61, "BCT (ϕ3, ϕ2)": 0.59},
    "cores4-ac-above-bct": {"CoReS": 0.9, "BCT": 0.5},
    "cores9-ac-above-bct": {"CoReS": 0.51, "BCT": 0.11},
    "cores9-same-init-above-random": {"SAME": 0.51, "RANDOM": 0.45},
    "cores9-same-init-above-fine-tuned": {"SAME": 0.51, "FINE-TUNED": 0.38},
    "cores-casia-lfw": {"CoReS AC, 9 upgrades": 0.58, "BCT AC, 9 upgrades": 0.09},
    "cores-market1501": {"CoReS AC, two upgrades": 1, "BCT AC, two upgrades": 0.3, "ℓ2 AC, two upgrades": 0,
                         "IFT AC, two upgrades": 0, "LwF AC, two upgrades": 0},
    "cores-gldv2": {"BCT old self-test": 0.18, "BCT cross-test (×)": 0.16, "CoReS old self-test": 0.19, "CoReS cross-test": 0.20},
    "cores-met": {"BCT old self-test": 0.63, "BCT cross-test (×)": 0.54, "CoReS old self-test": 0.59, "CoReS cross-test": 0.65},
    "psp-cifar-20-steps": {"PSP AC": 0.52, "LSP AC": 0.44, "BCT AC": 0.13, "PSP ACA": 12.99, "LSP ACA": 13.26, "BCT ACA": 5.20},
    "psp-cifar-50-steps": {"PSP AC": 0.39, "LSP AC": 0.36, "BCT AC": 0.01, "CoReS AC": 0.01, "PSP ACA": 10.76,
                           "LSP ACA": 11.25, "BCT ACA": 0.84},
    "psp-tinyimagenet-5-steps": {"PSP AC": 0.90, "LSP AC": 1, "BCT AC": 1, "PSP ACA": 17.99, "LSP ACA": 23.48, "BCT ACA": 22.92},
    "psp-tinyimagenet-20-steps": {"PSP AC": 0.91, "LSP AC": 0.83, "BCT AC": 0.64, "CoReS AC": 0.62, "PSP ACA": 15.33,
                                  "LSP ACA": 17.34, "BCT ACA": 14.75},
    "psp-tinyimagenet-50-steps": {"PSP AC": 0.90, "LSP AC": 0.80, "CoReS AC": 0.55, "PSP ACA": 14.95, "LSP ACA": 16.01,
                                  "CoReS ACA": 9.79},
    "psp-imagenet1k-5-steps": {"PSP AC": 1, "LSP AC": 0.50, "BCT AC": 0.20},
    "psp-gldv2-5-steps": {"PSP AC": 0.90, "LSP AC": 0.80, "LCE AC": 0.40},
    "psp-pretrained-architectures-imagenet1k": {"Softmax outputs (PSP) AC": 1, "Logits (LSP) AC": 0.7, "Encoder outputs AC": 0},
    "psp-pretrained-architectures-cifar100": {"Softmax outputs (PSP) AC": 0.9, "Logits (LSP) AC": 0.4, "Encoder outputs AC": 0},
    "psp-pretrained-architectures-places365": {"Softmax outputs (PSP) AC": 0.9, "Logits (LSP) AC": 0.2, "Encoder outputs AC": 0},
    "psp5-baseline-not-compatible": {"Baseline": 0},
}


def transcribed(claim: dict) -> dict[str, float]:
    """The transcription of the table cells ``claim`` quotes, by its ``where``."""
    where = claim["where"]
    if claim["id"] in LITERAL:
        return LITERAL[claim["id"]]
    if where.startswith("Table 1 (reprinted as Table VI") or where.startswith("Table 1 (Table VI"):
        column = {(7, "AC"): 0, (7, "AA_7"): 1, (31, "AC"): 2, (31, "AA_31"): 3}
        tasks = 31 if "31 tasks" in where else 7
        found = {}
        for method, row in IAM_TABLE1.items():
            for (t, statistic), index in column.items():
                if t == tasks and row[index] is not None and where.endswith(", " + statistic):
                    found[method] = found[f"{method} (×)"] = row[index]
                elif t == tasks and row[index] is not None and where.endswith(" and AA_31"):
                    found[f"{method} {statistic}"] = row[index]
        return found
    if match := re.match(r"Table II, CIFAR100/10, (\d+) tasks", where):
        tasks = int(match.group(1))
        return {f"{method} {statistic}" if "AC and ACA" in where else method: row[tasks][index]
                for method, row in CL2R_TABLE2.items() for index, statistic in ((0, "AC"), (2, "ACA"))
                if "AC and ACA" in where or where.endswith(", " + statistic)}
    if match := re.match(r"Table 1, (CIFAR100|TinyImageNet), ([\w-]+), (CMC@1|mAP) P_(com|up)", where):
        dataset, kind, metric, statistic = match.groups()
        if statistic == "up":
            return {name: value for (k, name), value in HBCT_P_UP.items() if k == kind}
        return dict(zip(HBCT_ROWS, HBCT_TABLE1[(kind, dataset, metric)]))
    if where.startswith("Table 1(a), CIFAR100, ResNet18, 5 steps"):
        index = {"AC": 0, "AA": 1, "ACA": 2}[where.split(", ")[-1].split(";")[0]]
        return {name: row[index] for name, row in PSP_TABLE1A_5.items()}
    return {}


@pytest.mark.parametrize("file, claim", CLAIMS, ids=[claim["id"] for _, claim in CLAIMS])
def test_every_quoted_number_is_the_papers(file, claim):
    table = transcribed(claim)
    for name, value in claim["numbers"]:
        assert name in table, f"{file}: {claim['id']} quotes {name!r}, which the transcription of {claim['where']!r} lacks"
        assert table[name] == value, f"{file}: {claim['id']}: {name} {value} (the paper prints {table[name]})"


def test_the_files_cover_the_five_papers_with_unique_ids_and_enough_declared_seeds():
    titles = {tomllib.loads(path.read_text())["paper"]["title"].split(":")[0] for path in FILES}
    assert titles == {"Stationary Representations", "A Stationary (and Therefore Compatible) Representation is All You Need",
                      "Learning Along the Arrow of Time", "CoReS", "The Probability Simplex is Compatible"}
    ids = [claim["id"] for _, claim in CLAIMS]
    assert len(ids) == len(set(ids))
    # the exact sign-flip test's smallest two-sided p is 2 / 2^n; a failure of one of m comparisons is decided at 0.05 / m
    for _, claim in [c for c in CLAIMS if not c[1].get("not_testable")]:
        m = len(claim.get("compare", [])) + len(claim.get("absent", []))
        needed = next(n for n in range(2, 20) if 2 / 2 ** n <= 0.05 / max(m, 1))
        assert claim["seeds"] == max(6, needed), (claim["id"], m, claim["seeds"])


def test_variants_are_tallied_apart_with_their_reason():
    for _, claim in CLAIMS:
        assert claim["tally"] in ("paper", "variant")
        assert bool(claim.get("variant")) == (claim["tally"] == "variant"), claim["id"]
    variants = {claim["id"] for _, claim in CLAIMS if claim["tally"] == "variant"}
    assert variants == {f"{m}5-ac-above-each{s}" for m in ("psp", "lsp") for s in ("-t1", "-seen", "-t1-seen")} | {
        "hbct-pcom-ext-data-10pct-cmc1", "iam7-replacement-gain"}


def test_each_claim_has_a_deciding_scenario_of_its_protocol_or_a_reason_it_cannot_be_run():
    for _, claim in CLAIMS:
        protocol, deciding = claim["protocol"], claim.get("deciding", "")
        assert bool(claim.get("not_testable")) != bool(deciding), claim["id"]
        if not deciding:
            continue
        overrides = [format_override(k, v) for k, v in claim.get("deciding_config", {}).items()]
        config = resolve_run(preset="cpu", scenarios=[deciding], methods=["bct"], assignments=overrides).scenarios[0].config
        models = getattr(config, "num_models", None) or getattr(config, "num_tasks", None) or 2
        found = (config.kind, config.eval_split, getattr(config, "eval_classes", "all"), models)
        assert found == (protocol["kind"], protocol["eval_split"], protocol.get("classes", "all"), protocol["models"]), claim["id"]
        assert [config.protocol] == sorted({p for p, _ in protocol["retrieval"]}), claim["id"]
        assert {m for _, m in protocol["retrieval"]} <= set(config.metrics), claim["id"]
        assert config.data.name in protocol["datasets"], claim["id"]


def test_the_new_scenarios_have_the_papers_task_counts_and_replacements():
    scenarios = {s.name: s.config for s in preset_scenarios("cpu")}
    assert scenarios["cl2r-16"].stops(50) == [5 + 3 * i for i in range(16)]  # the paper's 10% + 15 x 6%
    assert scenarios["cl2r-7"].stops(50) == [8, 15, 22, 29, 36, 43, 50]
    steps = scenarios["iam-cl2r-7"].steps(50)
    assert [s.index + 1 for s in steps if s.init == "pretrained"] == [1, 3, 5]  # start model, replacements at 3 and 5
    assert [s.seen_classes for s in scenarios["cores-open-3"].steps(51)] == [17, 34, 51]


def test_effects_are_half_the_papers_difference_where_so_declared():
    checked = 0
    for _, claim in CLAIMS:
        numbers = dict(claim["numbers"])
        for block in claim.get("compare", []):
            assert block["effect"] >= 0, claim["id"]
        if claim["effect_basis"] == "half the paper's difference" and len(numbers) == 2 and len(claim.get("compare", [])) == 1:
            first, second = numbers.values()
            assert claim["compare"][0]["effect"] == pytest.approx((first - second) / 2), claim["id"]
            checked += 1
    assert checked >= 10
    # by hand: HBCT ext-class CMC@1, best Euclidean baseline Hot-Refresh 0.360; CL2R 16 tasks, best other FD 0.45
    for claim_id, effect in (("hbct-pcom-ext-class-cifar-cmc1", 0.0675), ("cl2r16-hoc-ac-above-each", 0.225),
                             ("psp5-ac-above-each", 0.25)):
        assert [b["effect"] for b in _claim(claim_id)["compare"]] == pytest.approx([effect] * len(_claim(claim_id)["compare"]))


def test_absence_claims_name_the_papers_marks():
    absences = {claim["id"]: [(a["method"], a["statistic"], a["margin"]) for a in claim.get("absent", [])]
                for _, claim in CLAIMS if claim.get("absent")}
    assert absences["iam7-nonstationary-not-compatible"] == [(m, "AC", 0.1) for m in ("er", "fan", "bct", "lce", "advbct", "cvs")]
    for method in ("independent", "l2", "ift", "lwf"):  # CoReS Table 1: ITM, ℓ2, IFT and LwF marked ×
        assert absences[f"cores1-{method}-not-compatible"] == [(method, "cross-old_self", 0.0)]
    assert absences["cl2r16-lambda1-not-compatible"] == [("hoc", "AC", 0.1)]


def test_methods_and_implementation_tests_exist():
    host = PluginHost()
    host.load_all()
    methods = set(host.methods())
    for _, claim in CLAIMS:
        named = [b[k] for b in claim.get("compare", []) for k in ("a", "b")] + [a["method"] for a in claim.get("absent", [])]
        assert set(named) <= methods, claim["id"]
        for node in claim.get("implementation", []):
            path, test = node.split("::")
            assert f"def {test}(" in (ROOT / path).read_text(), node
