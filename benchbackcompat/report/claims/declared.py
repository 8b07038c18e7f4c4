"""A claims file: a paper's claims as declared data (TOML), read and checked before anything is judged.

One file per paper: ``[paper]`` (title, venue), then one ``[[claim]]`` per claim and setting, each with the
protocol it needs (``[claim.protocol]``), the seeds it declares, the table that decides it, and its comparisons
(``[[claim.compare]]``: a above b by a declared effect) or absences (``[[claim.absent]]``: X not compatible).
``docs/claims.md`` documents every field with a worked example.
"""
from __future__ import annotations

import difflib
import math
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from benchbackcompat.errors import BenchError
from benchbackcompat.overrides import MAX_DEPTH, depth
from benchbackcompat.report.claims.premises import PREMISES
from benchbackcompat.report.columns import STATISTICS
from benchbackcompat.scenarios.kinds import SCENARIO_KINDS

Number = Annotated[float, Strict()]  # an int or a float, never a string or a boolean; finite (``allow_inf_nan``)
Text = Annotated[str, Strict()]
MAX_SEEDS = 16  # the exact sign-flip test enumerates all 2^seeds sign assignments
MAX_BYTES = 4 << 20  # a claims file larger than this is refused before it is parsed (the studies' are < 100 kB)
DIFFERENCES = {"cross-old_self": ("cross", "old_self")}  # an absence statistic that is a difference of a row's cells
# a relative path to a Markdown file (no scheme, not absolute), then "#" and a GitHub heading anchor (lower case)
STUDY_SECTION = r"^(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+\.md#[a-z0-9_-]+$"


class Declared(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _one_of(what: str, name: str, known: Any) -> str:
    """``name`` if it is in ``known``, else a one-line error with the closest known name."""
    if name in known:
        return name
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
    raise ValueError(f"unknown {what} {name!r}{hint}")


class Paper(Declared):
    """``methods``: the paper's own methods (plugin names); a claim about none of them is about its baselines.
    ``study_section``: the study's section on this paper, a relative link from the paper's claims page
    (``claims/<name>.md``) to a Markdown file and a heading's anchor, e.g. ``../../studies/x.md#the-paper``."""

    title: Text = Field(min_length=1)
    venue: Text = Field(min_length=1)
    methods: tuple[Text, ...] = ()
    study_section: Text = ""

    @model_validator(mode="after")
    def _section(self) -> Paper:
        if self.study_section and not re.fullmatch(STUDY_SECTION, self.study_section):
            raise ValueError(f"study_section {self.study_section!r} is not a relative link to a Markdown heading: give "
                             "the path from the paper's page (claims/<name>.md) and the heading's anchor, e.g. "
                             "\"../../studies/study.md#the-paper\"")
        return self


class Protocol(Declared):
    """The evaluation a claim needs. ``retrieval``: accepted (protocol, metric) pairs; ``models``: the models (tasks)
    of the setting; ``datasets``: the paper's dataset first, then the declared stand-ins; ``architecture``: "same",
    or the paper's change (e.g. "resnet18 -> vit-b16"); ``pretrained``: the pretrained weights the setting needs."""

    kind: Text
    retrieval: tuple[tuple[Text, Text], ...] = Field(min_length=1)
    eval_split: Text
    classes: Literal["all", "seen"] = "all"
    models: Annotated[int, Strict()] | None = Field(default=None, ge=2)
    datasets: tuple[Text, ...] = ()
    architecture: Text = "same"
    pretrained: Text = ""

    @model_validator(mode="after")
    def _known(self) -> Protocol:
        _one_of("scenario kind", self.kind, SCENARIO_KINDS)
        return self

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
    return _one_of("statistic", name, [*STATISTICS, *DIFFERENCES])


class Compare(Declared):
    """a's ``statistic`` above b's (``b_statistic``: another statistic of b's row, e.g. a cross-test against its old
    self-test) by at least ``effect``. ``b_deciding`` (with ``b_deciding_config``): b's row comes from that declared
    table instead of the claim's deciding one (e.g. the same method without replacements), paired seed by seed."""

    a: Text
    b: Text
    statistic: Text
    effect: Number
    a_params: dict[str, Any] = {}
    b_params: dict[str, Any] = {}
    b_statistic: Text = ""
    b_deciding: Text = ""
    b_deciding_config: dict[str, Any] = {}

    @model_validator(mode="after")
    def _known(self) -> Compare:
        _statistic(self.statistic)
        if self.b_statistic:
            _statistic(self.b_statistic)
        if self.b_deciding_config and not self.b_deciding:
            raise ValueError("`b_deciding_config` needs the scenario of b's table (`b_deciding`)")
        return self


class Absent(Declared):
    """``method`` is not compatible: the interval of its ``statistic`` lies below ``margin``."""

    method: Text
    params: dict[str, Any] = {}
    statistic: Text = "AC"
    margin: Number

    @model_validator(mode="after")
    def _known(self) -> Absent:
        _statistic(self.statistic)
        return self


class Move(Declared):
    """A change of a claim's category (e.g. from *not testable* to *not run yet*), with when and where it was made:
    ``commit`` the commit that made it (empty: the claims file's revision of ``date``, not yet committed)."""

    date: Text = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    commit: Text = Field(default="", pattern=r"^([0-9a-f]{7,40})?$")
    before: Text = Field(min_length=1)
    after: Text = Field(min_length=1)
    why: Text = Field(min_length=1)


BLOCKERS = {"data": "data that cannot be obtained offline", "weights": "pretrained weights that cannot be obtained offline",
            "gpu": "work that needs a GPU"}
SUBJECTS = ("own", "baseline", "ablation")


class Claim(Declared):
    """One claim in one setting. ``numbers``: the paper's numbers for it, quoted as printed; ``tally``: "paper" for
    a claim the paper makes, "variant" for one it does not tabulate (``variant`` says why it is shown); ``subject``:
    whether it is about the paper's own method, a baseline or an ablation; ``seeds``: declared before the rows run,
    seeds 0 .. seeds-1 are judged; ``deciding``: the scenario whose table gives the claim's verdict,
    ``deciding_config`` the resolved configuration values (dotted keys, e.g. ``"train.min_steps"``) that table must
    have where the results hold several tables of the scenario; ``core_hours``: the cost of its declared run;
    ``premise``: a named condition of the paper's setting, measured on the rows ``premise_on`` (the setting's, not the
    method judged); ``not_testable``: why the setting cannot be run here, ``blocked_by`` what stops it (data or
    weights not obtainable offline, or GPU work of ``gpu_hours``); ``declared_after``: the part of its data that
    existed when it was declared; ``moved``: its category changes; ``implementation``: tests (``path::function``) of
    the formulas used."""

    id: Text = Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")
    statement: Text = Field(min_length=1)
    where: Text = Field(min_length=1)
    numbers: tuple[tuple[Text, Number], ...] = ()
    tally: Literal["paper", "variant"] = "paper"
    variant: Text = ""
    subject: Literal["own", "baseline", "ablation"] = "own"
    seeds: Annotated[int, Strict()] = Field(ge=2, le=MAX_SEEDS)
    effect_basis: Text = ""
    implementation: tuple[Text, ...] = ()
    premise: Text = ""
    premise_on: tuple[Text, ...] = ()
    not_testable: Text = ""
    blocked_by: Literal["", "data", "weights", "gpu"] = ""
    gpu_hours: Number | None = Field(default=None, gt=0)
    core_hours: Number | None = Field(default=None, gt=0)
    deciding: Text = ""
    deciding_config: dict[str, Any] = {}
    declared_after: Text = ""
    moved: tuple[Move, ...] = ()
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
        if bool(self.not_testable) != bool(self.blocked_by):
            raise ValueError("a claim that is not testable says what blocks it (`blocked_by`: data, weights or gpu) and "
                             "why (`not_testable`); a buildable setting is declared with `deciding` and stays "
                             "*not run yet* until it runs")
        if self.blocked_by == "gpu" and self.gpu_hours is None:
            raise ValueError("GPU work states its cost (`gpu_hours`)")
        if self.premise:
            _one_of("premise", self.premise, PREMISES)
            if not self.premise_on:
                raise ValueError("name the rows the premise is measured on (`premise_on`: the setting's, e.g. "
                                 "[\"er\"], not the method judged)")
        elif self.premise_on:
            raise ValueError("`premise_on` needs a `premise`")
        return self

    @property
    def quote(self) -> str:
        return f"{self.where}: " + ", ".join(f"{name} {value:g}" for name, value in self.numbers)

    @property
    def comparisons(self) -> int:
        return len(self.compare) + len(self.absent)


class Excluded(Declared):
    """A statement of the paper left out of the claims, with why."""

    what: Text = Field(min_length=1)
    where: Text = Field(min_length=1)
    why: Text = Field(min_length=1)


class ClaimsFile(Declared):
    paper: Paper
    preset: Text = ""  # the preset that defines the deciding scenarios ("": any available preset)
    claim: tuple[Claim, ...] = Field(min_length=1)
    excluded: tuple[Excluded, ...] = ()
    path: str = ""  # where it was read from (set by :func:`load_claims`)

    @model_validator(mode="after")
    def _unique(self) -> ClaimsFile:
        ids = [c.id for c in self.claim]
        if repeated := sorted({i for i in ids if ids.count(i) > 1}):
            raise ValueError(f"claim ids must be unique: {', '.join(repeated)} repeated")
        return self

    @property
    def name(self) -> str:
        """The file's stem: the name of the paper's page (``claims/<name>.md``)."""
        return Path(self.path).stem if self.path else "claims"


def load_claims(path: Path) -> ClaimsFile:
    """Read and check one claims file; a one-line error names what is wrong and where."""
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise BenchError(f"claims file {path}: larger than {MAX_BYTES >> 20} MiB; a claims file holds a paper's "
                             "claims (the studies' are under 100 kB)")
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise BenchError(f"claims file {path}: not found; pass the path of a TOML claims file (docs/claims.md)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BenchError(f"claims file {path}: cannot be read ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise BenchError(f"claims file {path}: not valid TOML ({error})") from None
    except (RecursionError, MemoryError):
        raise BenchError(f"claims file {path}: tables or arrays nested more than {MAX_DEPTH} deep") from None
    if depth(data) > MAX_DEPTH:
        raise BenchError(f"claims file {path}: tables or arrays nested more than {MAX_DEPTH} deep")
    if (where := _not_finite(data)) is not None:
        raise BenchError(f"claims file {path}: {_place(where, data)}: not a finite number; a claims file holds "
                         "finite numbers only")
    try:
        return ClaimsFile.model_validate({**data, "path": str(path)})
    except ValidationError as error:
        raise BenchError(f"claims file {path}: {validation_text(error, data)}; see docs/claims.md") from None


def _not_finite(value: Any, loc: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """The location of the first nan or inf in ``value`` (parsed TOML), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return loc
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return next((found for key, child in children if (found := _not_finite(child, (*loc, key))) is not None), None)


def _place(loc: tuple[Any, ...] | list[Any], data: dict[str, Any]) -> str:
    """A location as the page names it: ``claim <id>.field...`` inside a claim, else the dotted keys."""
    loc = list(loc)
    if len(loc) > 1 and loc[0] == "claim" and isinstance(loc[1], int):
        claims = data.get("claim") or []
        name = claims[loc[1]].get("id") if loc[1] < len(claims) and isinstance(claims[loc[1]], dict) else None
        return f"claim {name or '#' + str(loc[1] + 1)}" + "".join(f".{p}" for p in loc[2:])
    return ".".join(map(str, loc))


def validation_text(error: ValidationError, data: dict[str, Any]) -> str:
    """The first problems of a claims file on one line, each at its claim's id and field (an unknown key with the
    closest known one), then how many more."""
    errors = error.errors()
    inside = any(len(e["loc"]) > 1 and e["loc"][0] == "claim" for e in errors)
    parts = []
    for item in errors:
        loc = list(item["loc"])
        if inside and item["type"] == "too_short" and loc == ["claim"]:
            continue  # pydantic counts the broken claims out of the list: "at least 1 item" would be misleading
        message = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            known = list(_model_at(loc[:-1]).model_fields) if _model_at(loc[:-1]) else []
            close = difflib.get_close_matches(str(loc[-1]), known, n=1)
            message = "unknown key" + (f", did you mean {close[0]}?" if close else f" (known: {', '.join(known)})")
        elif item["type"] in ("float_type", "int_type", "string_type") and "input" in item:
            message += f", got {type(item['input']).__name__} {item['input']!r:.40}"
        parts.append(f"{_place(loc, data)}: {message}")
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
