"""A claims file checked against what is installed, before anything is judged: every method a claim compares (and
its hyperparameters, strictly), every deciding scenario with its configuration values (in its preset, as ``run``
resolves them), every retrieval protocol and metric. Each problem is one line with the closest known name.
``load_all`` loads several claims files and checks them so."""
from __future__ import annotations

import difflib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from benchbackcompat.errors import BenchError
from benchbackcompat.execution.plugin_host import PluginHost
from benchbackcompat.execution.presets import available_presets, load_preset, resolve_run
from benchbackcompat.overrides import format_override
from benchbackcompat.report.claims.declared import Claim, ClaimsFile, load_claims


def _unknown(what: str, name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.5)
    return f"unknown {what} {name!r}" + (f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(sorted(known))})")


def check_installed(file: ClaimsFile, host: PluginHost | None = None) -> None:
    """Raise a one-line :class:`BenchError` at the first claim of ``file`` that names something not installed."""
    host = host or PluginHost()
    host.load_all()
    methods = host.methods()
    presets = _presets(file)
    for claim in file.claim:
        where = f"claims file {file.path}: claim {claim.id}"
        try:
            _check_claim(claim, methods, presets, file.paper.methods)
        except BenchError as error:
            raise BenchError(f"{where}: {error}") from None


def _presets(file: ClaimsFile) -> dict[str, dict[str, Any]]:
    """The presets a deciding scenario may come from: the file's ``preset``, else every available one."""
    names = [file.preset] if file.preset else sorted(available_presets())
    if file.preset and file.preset not in available_presets():
        raise BenchError(f"claims file {file.path}: preset: {_unknown('preset', file.preset, available_presets())}")
    return {name: load_preset(name) for name in names}


def _check_claim(claim: Claim, methods: dict[str, Any], presets: dict[str, dict[str, Any]],
                 own: Collection[str]) -> None:
    from benchbackcompat.metrics.protocols import SCORERS  # torch: imported only where claims are checked

    for name in own:
        if name not in methods:
            raise BenchError(f"paper.methods: {_unknown('method', name, methods)}")
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for i, entry in enumerate(claim.compare):
        rows += [(f"compare.{i}.a", entry.a, entry.a_params), (f"compare.{i}.b", entry.b, entry.b_params)]
    rows += [(f"absent.{i}.method", entry.method, entry.params) for i, entry in enumerate(claim.absent)]
    rows += [(f"premise_on.{i}", name, {}) for i, name in enumerate(claim.premise_on)]
    for field, name, params in rows:
        if name not in methods:
            raise BenchError(f"{field}: {_unknown('method', name, methods)}")
        _check_params(field, name, params, methods[name])
    protocols = {p for p, _ in SCORERS}
    for protocol, metric in claim.protocol.retrieval:
        if protocol not in protocols:
            raise BenchError(f"protocol.retrieval: {_unknown('retrieval protocol', protocol, protocols)}")
        if (protocol, metric) not in SCORERS:
            defined = [m for p, m in SCORERS if p == protocol]
            raise BenchError(f"protocol.retrieval: {_unknown(f'metric of protocol {protocol!r}', metric, defined)}")
    if own and claim.subject == "own" and (named := {n for _, n, _ in rows}) and not named & set(own):
        raise BenchError(f"subject: \"own\", but it compares none of the paper's methods ({', '.join(own)}); "
                         "say `subject = \"baseline\"` (or \"ablation\")")
    tables = [(claim.deciding, claim.deciding_config)] if claim.deciding else []
    tables += [(e.b_deciding, e.b_deciding_config) for e in claim.compare if e.b_deciding]
    for scenario, config in tables:
        _check_scenario(scenario, config, presets, [name for _, name, _ in rows] or ["independent"])


def _check_params(field: str, name: str, params: dict[str, Any], method: Any) -> None:
    known = method.Params.model_fields
    for key in params:
        if key not in known:
            raise BenchError(f"{field}: {_unknown(f'hyperparameter of {name}', key, known)}")
    try:
        method.Params.model_validate(params, strict=True)
    except ValidationError as error:
        problem = error.errors()[0]
        raise BenchError(f"{field}: {name} {'.'.join(map(str, problem['loc']))}: {problem['msg']}, got "
                         f"{problem.get('input')!r:.40}") from None


def _check_scenario(scenario: str, config: dict[str, Any], presets: dict[str, dict[str, Any]],
                    methods: list[str]) -> None:
    """The scenario resolves in one of ``presets`` with ``config`` set, as ``run --set`` would resolve it."""
    holding = [name for name, data in presets.items() if scenario in data["scenarios"]]
    if not holding:
        known = {s for data in presets.values() for s in data["scenarios"]}
        what = "scenario (presets: " + ", ".join(presets) + ")"
        raise BenchError(f"deciding: {_unknown(what, scenario, known)}")
    try:
        resolve_run(preset=holding[0], scenarios=[scenario], methods=sorted(set(methods)),
                    assignments=[format_override(key, value) for key, value in config.items()])
    except BenchError as error:
        raise BenchError(f"deciding {scenario} with {config}: {error}") from None


def load_all(paths: list[Path], installed: bool = True) -> list[ClaimsFile]:
    """Several claims files; a claim id repeated across them is an error (ids name claims on the page).
    ``installed``: also check every method, its hyperparameters, every scenario and configuration value against the
    installed plugins and the presets (:func:`check_installed`), before anything is judged."""
    files = [load_claims(p) for p in paths]
    seen: dict[str, str] = {}
    for file in files:
        for claim in file.claim:
            if claim.id in seen:
                raise BenchError(f"claims file {file.path}: claim id {claim.id!r} is also in {seen[claim.id]}; "
                                 "give each claim its own id")
            seen[claim.id] = file.path
    if installed:
        for file in files:
            check_installed(file)
    return files
