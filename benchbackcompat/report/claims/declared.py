"""A claims file: a paper's claims as declared data (TOML), read and checked before anything is judged.

One file per paper: ``[paper]`` (title, venue), then one ``[[claim]]`` per claim and setting, each with the
protocol it needs (``[claim.protocol]``), the seeds it declares, the table that decides it, and its comparisons
(``[[claim.compare]]``: a above b by a declared effect) or absences (``[[claim.absent]]``: X not compatible).
``docs/claims.md`` documents every field with a worked example.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

import difflib

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from benchbackcompat.errors import BenchError
from benchbackcompat.report.columns import STATISTICS

DIFFERENCES = {"cross-old_self": ("cross", "old_self")}  # an absence statistic that is a difference of a row's cells


class Declared(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Paper(Declared):
    title: str = Field(min_length=1)
    venue: str = Field(min_length=1)


class Protocol(Declared):
    """The evaluation a claim needs. ``retrieval``: accepted (protocol, metric) pairs; ``models``: the models (tasks)
    of the setting; ``datasets``: the paper's dataset first, then the declared stand-ins; ``architecture``: "same",
    or the paper's change (e.g. "resnet18 -> vit-b16"); ``pretrained``: the pretrained weights the setting needs."""

    kind: str
    retrieval: tuple[tuple[str, str], ...] = Field(min_length=1)
    eval_split: str
    classes: Literal["all", "seen"] = "all"
    models: int | None = Field(default=None, ge=2)
    datasets: tuple[str, ...] = ()
    architecture: str = "same"
    pretrained: str = ""

    def describe(self) -> str:
        pairs = " or ".join(f"{protocol} {metric}" for protocol, metric in self.retrieval)
        parts = [self.kind, pairs, f"{self.eval_split} split", f"{self.classes} classes scored"]
        if self.models:
            parts.append(f"{self.models} models")
        if self.datasets:
            parts.append(self.datasets[0] + (f" (stand-ins: {', '.join(self.datasets[1:])})" if self.datasets[1:] else ""))
        if self.architecture != "same":
            parts.append(self.architecture)
        if self.pretrained:
            parts.append(f"pretrained: {self.pretrained}")
        return " · ".join(parts)


def _statistic(name: str) -> str:
    if name not in STATISTICS and name not in DIFFERENCES:
        raise ValueError(f"unknown statistic {name!r} (known: {', '.join([*STATISTICS, *DIFFERENCES])})")
    return name


class Compare(Declared):
    """a's ``statistic`` above b's (``b_statistic``: another statistic of b's row, e.g. a cross-test against its old
    self-test) by at least ``effect``."""

    a: str
    b: str
    statistic: str
    effect: float
    a_params: dict[str, Any] = {}
    b_params: dict[str, Any] = {}
    b_statistic: str = ""

    @model_validator(mode="after")
    def _known(self) -> Compare:
        _statistic(self.statistic)
        if self.b_statistic:
            _statistic(self.b_statistic)
        return self


class Absent(Declared):
    """``method`` is not compatible: the interval of its ``statistic`` lies below ``margin``."""

    method: str
    params: dict[str, Any] = {}
    statistic: str = "AC"
    margin: float

    @model_validator(mode="after")
    def _known(self) -> Absent:
        _statistic(self.statistic)
        return self


class Claim(Declared):
    """One claim in one setting. ``numbers``: the paper's numbers for it, quoted as printed; ``tally``: "paper" for
    a claim the paper makes, "variant" for one it does not tabulate (``variant`` says why it is shown); ``seeds``:
    declared before the rows run, seeds 0 .. seeds-1 are judged; ``deciding``: the scenario whose table gives the
    claim's verdict, ``deciding_config`` the resolved configuration values (dotted keys, e.g. ``"train.min_steps"``)
    that table must have where the results hold several tables of the scenario; ``premise``: a
    named condition of the paper's setting each compared row must show; ``not_testable``: why this scale cannot run
    the setting (counted apart from undecidable); ``implementation``: tests (``path::function``) of the formulas used."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    statement: str = Field(min_length=1)
    where: str = Field(min_length=1)
    numbers: tuple[tuple[str, float], ...] = ()
    tally: Literal["paper", "variant"] = "paper"
    variant: str = ""
    seeds: int = Field(ge=2)
    effect_basis: str = ""
    implementation: tuple[str, ...] = ()
    premise: str = ""
    not_testable: str = ""
    deciding: str = ""
    deciding_config: dict[str, Any] = {}
    protocol: Protocol
    compare: tuple[Compare, ...] = ()
    absent: tuple[Absent, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> Claim:
        if self.compare and self.absent:
            raise ValueError("give either [[claim.compare]] entries or [[claim.absent]] entries, not both")
        if not (self.compare or self.absent or self.not_testable):
            raise ValueError("give its [[claim.compare]] or [[claim.absent]] entries, or say why it is not testable "
                             "(`not_testable`)")
        if (self.tally == "variant") != bool(self.variant):
            raise ValueError("a variant (tally = \"variant\") says why it is shown in `variant`; a paper claim leaves it empty")
        if not self.not_testable and not self.deciding:
            raise ValueError("name the table that decides it (`deciding`), or say why it is not testable (`not_testable`)")
        return self

    @property
    def quote(self) -> str:
        return f"{self.where}: " + ", ".join(f"{name} {value:g}" for name, value in self.numbers)

    @property
    def comparisons(self) -> int:
        return len(self.compare) + len(self.absent)


class ClaimsFile(Declared):
    paper: Paper
    claim: tuple[Claim, ...] = Field(min_length=1)
    path: str = ""  # where it was read from (set by :func:`load_claims`)

    @model_validator(mode="after")
    def _unique(self) -> ClaimsFile:
        ids = [c.id for c in self.claim]
        if repeated := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"claim ids must be unique: {', '.join(repeated)} repeated")
        return self


def load_claims(path: Path) -> ClaimsFile:
    """Read and check one claims file; a one-line error names what is wrong and where."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchError(f"claims file {path}: not found; pass the path of a TOML claims file (docs/claims.md)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BenchError(f"claims file {path}: cannot be read ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise BenchError(f"claims file {path}: not valid TOML ({error})") from None
    try:
        return ClaimsFile.model_validate({**data, "path": str(path)})
    except ValidationError as error:
        raise BenchError(f"claims file {path}: {validation_text(error, data)}; see docs/claims.md") from None


def validation_text(error: ValidationError, data: dict[str, Any]) -> str:
    """The first problems of a claims file on one line, each at its claim's id and field (an unknown key with the
    known ones), then how many more."""
    errors = error.errors()
    inside = any(len(e["loc"]) > 1 and e["loc"][0] == "claim" for e in errors)
    parts = []
    for item in errors:
        loc = list(item["loc"])
        if inside and item["type"] == "too_short" and loc == ["claim"]:
            continue  # pydantic counts the broken claims out of the list: "at least 1 item" would be misleading
        where = ".".join(map(str, loc))
        if len(loc) > 1 and loc[0] == "claim" and isinstance(loc[1], int):
            claims = data.get("claim") or []
            name = claims[loc[1]].get("id") if loc[1] < len(claims) and isinstance(claims[loc[1]], dict) else None
            where = f"claim {name or '#' + str(loc[1] + 1)}" + "".join(f".{p}" for p in loc[2:])
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            known = list(_model_at(loc[:-1]).model_fields) if _model_at(loc[:-1]) else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            message = "unknown key" + (f", did you mean {close[0]}?" if close else f" (known: {', '.join(known)})")
        parts.append(f"{where}: {message}")
    more = f"; and {len(parts) - 3} more" if len(parts) > 3 else ""
    return "; ".join(parts[:3]) + more


def _model_at(loc: list[Any]) -> type[BaseModel] | None:
    """The declared model a location points into (for the known keys of an unknown one)."""
    model: type[BaseModel] = ClaimsFile
    for part in loc:
        if isinstance(part, int):
            continue
        annotation = model.model_fields[str(part)].annotation if str(part) in model.model_fields else None
        inner = getattr(annotation, "__args__", (annotation,))
        model = next((a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None)
        if model is None:
            return None
    return model


def load_all(paths: list[Path]) -> list[ClaimsFile]:
    """Several claims files; a claim id repeated across them is an error (ids name claims on the page)."""
    files = [load_claims(p) for p in paths]
    seen: dict[str, str] = {}
    for file in files:
        for claim in file.claim:
            if claim.id in seen:
                raise BenchError(f"claims file {file.path}: claim id {claim.id!r} is also in {seen[claim.id]}; "
                                 "give each claim its own id")
            seen[claim.id] = file.path
    return files
