"""The checks of a claims file read as plain TOML, beyond what loading it validates: every quoted number against a
transcription of the paper's tables, declared seeds enough for the exact sign-flip test, variants tallied apart with
their reason, every deciding scenario of the claim's protocol in the preset, effects half the paper's difference where
so declared, every method and implementation test installed. Run here on a made-up claims file
(``fixtures/claims.toml``), once as written and once broken in each way; the study's claims files are judged by the
same checks in ``studies/cpu-scale/tests``."""
from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import resolve_run
from benchbackcompat.overrides import format_override
from benchbackcompat.report.claims import load_claims

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "claims.toml"
Claims = list[tuple[str, dict]]  # (file name, claim as plain TOML)


def claims_of(paths: list[Path]) -> Claims:
    return [(path.name, claim) for path in paths for claim in tomllib.loads(path.read_text(encoding="utf-8"))["claim"]]


def number_problems(claims: Claims, transcribed: Callable[[dict], dict[str, float]]) -> list[str]:
    """Quoted numbers that ``transcribed(claim)`` (the paper's table cells the claim quotes) lacks or prints otherwise."""
    problems = []
    for file, claim in claims:
        table = transcribed(claim)
        for name, value in claim["numbers"]:
            if name not in table:
                problems.append(f"{file}: {claim['id']} quotes {name!r}, which the transcription of {claim['where']!r} lacks")
            elif table[name] != value:
                problems.append(f"{file}: {claim['id']}: {name} {value} (the paper prints {table[name]})")
    return problems


def id_problems(claims: Claims) -> list[str]:
    ids = [claim["id"] for _, claim in claims]
    return sorted({f"{claim_id} is declared {ids.count(claim_id)} times" for claim_id in ids if ids.count(claim_id) > 1})


def seed_problems(claims: Claims) -> list[str]:
    """Testable claims whose seeds are not max(6, n), n the fewest seeds whose smallest two-sided p of the exact
    sign-flip test, 2 / 2^n, decides one failure of m comparisons at 0.05 / m."""
    problems = []
    for _, claim in claims:
        if claim.get("not_testable"):
            continue
        m = len(claim.get("compare", [])) + len(claim.get("absent", []))
        needed = max(6, next(n for n in range(2, 20) if 2 / 2 ** n <= 0.05 / max(m, 1)))
        if claim["seeds"] != needed:
            problems.append(f"{claim['id']}: {claim['seeds']} seeds for {m} comparisons, not {needed}")
    return problems


def tally_problems(claims: Claims) -> list[str]:
    """Claims tallied neither as the paper's nor as a variant, or a variant without its reason (or a reason without)."""
    return [claim["id"] for _, claim in claims
            if claim["tally"] not in ("paper", "variant") or bool(claim.get("variant")) != (claim["tally"] == "variant")]


def deciding_problems(claims: Claims, preset: str = "cpu") -> list[str]:
    """Claims with both or neither of a deciding scenario and a reason they cannot be run, and deciding scenarios whose
    configuration in ``preset`` (with the claim's ``deciding_config``) is not the claim's protocol."""
    problems = []
    for _, claim in claims:
        protocol, deciding = claim["protocol"], claim.get("deciding", "")
        if bool(claim.get("not_testable")) == bool(deciding):
            problems.append(f"{claim['id']}: not_testable and deciding both set or both empty")
            continue
        if not deciding:
            continue
        overrides = [format_override(k, v) for k, v in claim.get("deciding_config", {}).items()]
        config = resolve_run(preset=preset, scenarios=[deciding], methods=["bct"], assignments=overrides).scenarios[0].config
        models = getattr(config, "num_models", None) or getattr(config, "num_tasks", None) or 2
        found = (config.kind, config.eval_split, getattr(config, "eval_classes", "all"), models)
        expected = (protocol["kind"], protocol["eval_split"], protocol.get("classes", "all"), protocol["models"])
        if found != expected:
            problems.append(f"{claim['id']}: {deciding} is {found}, the protocol {expected}")
        elif [config.protocol] != sorted({p for p, _ in protocol["retrieval"]}):
            problems.append(f"{claim['id']}: {deciding} retrieves by {config.protocol}")
        elif not {m for _, m in protocol["retrieval"]} <= set(config.metrics) or config.data.name not in protocol["datasets"]:
            problems.append(f"{claim['id']}: {deciding} scores {config.metrics} on {config.data.name}")
    return problems


def effect_problems(claims: Claims) -> tuple[list[str], int]:
    """Negative effects, and effects not half the difference of the two quoted numbers where a claim of one comparison
    declares ``effect_basis = "half the paper's difference"``; and how many claims that second check read."""
    problems, checked = [], 0
    for _, claim in claims:
        numbers = dict(claim["numbers"])
        problems += [f"{claim['id']}: effect {b['effect']}" for b in claim.get("compare", []) if b["effect"] < 0]
        if claim["effect_basis"] == "half the paper's difference" and len(numbers) == 2 and len(claim.get("compare", [])) == 1:
            first, second = numbers.values()
            if claim["compare"][0]["effect"] != pytest.approx((first - second) / 2):
                problems.append(f"{claim['id']}: effect {claim['compare'][0]['effect']}, not ({first} - {second}) / 2")
            checked += 1
    return problems, checked


def unknown_names(claims: Claims) -> list[str]:
    """Compared or absent methods that are not installed, and implementation tests (``path::test``) not found."""
    host = PluginHost()
    host.load_all()
    methods = set(host.methods())
    problems = []
    for _, claim in claims:
        named = [b[k] for b in claim.get("compare", []) for k in ("a", "b")] + [a["method"] for a in claim.get("absent", [])]
        problems += [f"{claim['id']}: method {m}" for m in sorted(set(named) - methods)]
        for node in claim.get("implementation", []):
            path, test = node.split("::")
            if not (ROOT / path).is_file() or f"def {test}(" not in (ROOT / path).read_text(encoding="utf-8"):
                problems.append(f"{claim['id']}: test {node}")
    return problems


# ------------------------------------------------------------------ the made-up file
TRANSCRIPTION = {  # the made-up paper's tables, "typed once"
    "made-up-hoc-ac-above-bct": {"HOC": 0.8, "BCT": 0.2},
    "made-up-l2-not-compatible": {"old self-test": 0.5, "ℓ2 cross-test (×)": 0.3},
    "made-up-hoc-ac-above-bct-faces": {"HOC": 0.7, "BCT": 0.1},
}
CLAIMS = claims_of([FIXTURE])


def transcribed(claim: dict) -> dict[str, float]:
    return TRANSCRIPTION.get(claim["id"], {})


def broken(claim_id: str, change: Callable[[dict], None]) -> Claims:
    """The fixture's claims with ``change`` applied to a copy of claim ``claim_id``."""
    claims = copy.deepcopy(CLAIMS)
    change(next(claim for _, claim in claims if claim["id"] == claim_id))
    return claims


def test_the_made_up_file_loads_and_passes_every_check():
    assert [c.id for c in load_claims(FIXTURE).claim] == list(TRANSCRIPTION)
    assert number_problems(CLAIMS, transcribed) == []
    assert id_problems(CLAIMS) == seed_problems(CLAIMS) == tally_problems(CLAIMS) == deciding_problems(CLAIMS) == []
    assert effect_problems(CLAIMS) == ([], 2)  # (0.8 - 0.2) / 2 and (0.7 - 0.1) / 2
    assert unknown_names(CLAIMS) == []


def test_each_check_finds_the_claim_that_breaks_it():
    hoc, l2, faces = TRANSCRIPTION
    assert number_problems(broken(hoc, lambda c: c["numbers"][1].__setitem__(1, 0.25)), transcribed) == [
        f"claims.toml: {hoc}: BCT 0.25 (the paper prints 0.2)"]
    assert number_problems(broken(l2, lambda c: c["numbers"].append(["IFT", 0.4])), transcribed) == [
        f"claims.toml: {l2} quotes 'IFT', which the transcription of 'Table 2, one upgrade' lacks"]
    assert id_problems(broken(faces, lambda c: c.update(id=hoc))) == [f"{hoc} is declared 2 times"]
    # two comparisons decide at 0.025 each: 2 / 2^7 = 0.016 needs 7 seeds
    assert seed_problems(broken(hoc, lambda c: c["compare"].append(dict(c["compare"][0], b="l2")))) == [
        f"{hoc}: 6 seeds for 2 comparisons, not 7"]
    assert seed_problems(broken(faces, lambda c: c.update(seeds=3))) == []  # not testable: no seeds needed
    assert tally_problems(broken(faces, lambda c: c.update(variant=""))) == [faces]
    assert tally_problems(broken(hoc, lambda c: c.update(tally="both"))) == [hoc]
    assert deciding_problems(broken(hoc, lambda c: c.update(deciding="cl2r-16"))) == [
        f"{hoc}: cl2r-16 is ('cl2r', 'open', 'all', 16), the protocol ('cl2r', 'open', 'all', 7)"]
    assert deciding_problems(broken(l2, lambda c: c.update(not_testable="no data"))) == [
        f"{l2}: not_testable and deciding both set or both empty"]
    assert effect_problems(broken(hoc, lambda c: c["compare"][0].update(effect=0.6))) == (
        [f"{hoc}: effect 0.6, not (0.8 - 0.2) / 2"], 2)
    assert unknown_names(broken(l2, lambda c: c["absent"][0].update(method="no-such-method"))) == [
        f"{l2}: method no-such-method"]
    assert unknown_names(broken(hoc, lambda c: c["implementation"].append("tests/test_metrics_compatibility.py::nothing"))) == [
        f"{hoc}: test tests/test_metrics_compatibility.py::nothing"]
