"""The leaderboard's columns: which statistics each scenario kind reports, their direction and format.

Every statistic declares whether higher is better; bold cells follow that declaration. Each scenario
kind declares its statistics, its primary statistic and a tie-breaker (``ScenarioBase.statistics`` and
``ranking``); the columns and the rank follow them. Context statistics (the self-tests a ratio divides by)
are shown, never bolded or ranked. The flip rates of every update pair (``metrics.flips``) follow each hit
metric's statistics, in a view of their own; a sequence adds those of its last model on the first gallery, in
another.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from benchbackcompat.scenarios.kinds import kind_class
from benchbackcompat import evaluations
from benchbackcompat.metrics import flips, live
from benchbackcompat.metrics.names import METRICS


@dataclass(frozen=True)
class Statistic:
    key: str  # the key in a record's ``metrics[<metric>]``
    header: str
    higher_is_better: bool
    digits: int
    meaning: str
    context: bool = False  # shown so that other columns can be read; not bolded
    bounds: tuple[float, float] = (-math.inf, math.inf)  # the values it can take; intervals stay inside them
    view: str = ""  # the title of the view it is shown in apart from the headline ("": its metric's statistics)
    always_listed: bool = True  # False: the reading guide lists it only where a table shows it (added since)


PERCENT = (0.0, 100.0)
FLIPS = "negative and positive flip rates"
FIRST_GALLERY = "flip rates on the first gallery, never backfilled"
STATISTICS = {
    s.key: s
    for s in (
        Statistic("old_self", "old self", True, 2, "old query vs old gallery (%)", context=True, bounds=PERCENT),
        Statistic("reference_self", "ref self", True, 2,
                  "self-test of the independently trained new model, the reference of P_com and P_up (%)", context=True,
                  bounds=PERCENT),
        Statistic("self", "self", True, 2, "new query vs new gallery (%)", bounds=PERCENT),
        Statistic("cross", "cross", True, 2, "new query vs old gallery (%)", bounds=PERCENT),
        Statistic("p_up", "P_up", True, 3, "(self - independent new self) / independent new self (HBCT)",
                  bounds=(-1.0, math.inf)),
        Statistic("p_com", "P_com", True, 3, "(cross - old self) / (independent new self - old self) (HBCT Eq. 14)"),
        Statistic("AC", "AC", True, 3, "fraction of pairs k < t with C[t][k] > C[k][k] (strict)", bounds=(0.0, 1.0)),
        Statistic("AA", "AA", True, 2, "mean of the lower triangle of C, diagonal included (%)", bounds=PERCENT),
        Statistic("ACA", "ACA", True, 2, "sum of the compatible C[t][k] over T(T-1)/2 (%)", bounds=PERCENT),
        Statistic("nfr_cross", "NFR cross", False, 2, "negative flip rate old self -> cross: queries right under "
                  "C[k][k], wrong under C[t][k] (%; mean over consecutive pairs for sequences)", bounds=PERCENT, view=FLIPS),
        Statistic("pfr_cross", "PFR cross", True, 2, "positive flip rate old self -> cross: wrong under C[k][k], "
                  "right under C[t][k] (%)", bounds=PERCENT, view=FLIPS),
        Statistic("nfr_self", "NFR self", False, 2, "negative flip rate old self -> new self: right under C[k][k], "
                  "wrong under C[t][t], what a full backfill leaves broken (%)", bounds=PERCENT,
                  view=FLIPS),
        Statistic("pfr_self", "PFR self", True, 2, "positive flip rate old self -> new self (%)", bounds=PERCENT,
                  view=FLIPS),
        Statistic("nfr_first", "NFR first", False, 2, "negative flip rate of a team that never backfills: right under "
                  "the first self-test C[0][0], wrong under the last model's queries on the first gallery C[T-1][0] "
                  "(%; sequences)", bounds=PERCENT, view=FIRST_GALLERY),
        Statistic("pfr_first", "PFR first", True, 2, "positive flip rate C[0][0] -> C[T-1][0], first gallery kept (%; "
                  "sequences)", bounds=PERCENT, view=FIRST_GALLERY),
    )
}
# the views of the evaluation options' statistics, one per metric
BACKFILL, INDEX = evaluations.option("backfill").view, evaluations.option("index").view
LIVE = tuple(option.view for option in evaluations.EVALUATION_OPTIONS)
FIRST_ORDERS = ("random", "class-distance", "class-balanced")  # the orders whose statistics the guide always lists
STATISTICS.update({s.key: s for order in live.ORDERS for s in (
    Statistic(f"auc_{order}", f"AUC {order}", True, 2, f"area under the backfilling curve, {order} refresh order: the "
              "mean accuracy while the gallery is refreshed from 0 to 100% (%)", bounds=PERCENT, view=BACKFILL,
              always_listed=order in FIRST_ORDERS),
    Statistic(f"dip_{order}", f"dip {order}", True, 2, f"the backfilling curve's lowest point ({order} order) minus the "
              "old self-test C[k][k] (points; below 0: the refresh serves worse than the old model did)", view=BACKFILL,
              always_listed=order in FIRST_ORDERS),
    Statistic(f"dip_at_{order}", f"dip at {order}", True, 0, f"% of the gallery refreshed at that lowest point ({order} "
              "order)", context=True, bounds=PERCENT, view=BACKFILL, always_listed=order in FIRST_ORDERS),
    Statistic(f"nfr_max_{order}", f"NFR max {order}", False, 2, f"the highest negative flip rate along the backfilling "
              f"curve ({order} order): % of the queries right under the old self-test C[k][k] and wrong at that step",
              bounds=PERCENT, view=BACKFILL, always_listed=False),
)})
STATISTICS["auc_permutations_random"] = Statistic(
    "auc_permutations_random", "AUC random (permutations)", True, 2, "area under the backfilling curve, random order, "
    "mean over the random permutations of the refresh drawn per seed (%)", bounds=PERCENT, view=BACKFILL,
    always_listed=False)
STATISTICS.update({s.key: s for kind in live.INDEX_KINDS for which, entries in (("cross", "cross-tests k < t"),
                                                                                ("self", "self-tests k = t"))
                   for s in (Statistic(f"gap_{which}_{kind}", f"{kind} gap {which}", False, 2,
                                       f"exact − through the {kind} index, mean over the {entries} (points)",
                                       view=INDEX),)})


# Statistics a record stores under another name with the same value: CoReS's update gain with the independently trained
# new model as its upper bound is P_com on one update (``engine.cell``). Wherever P_com is not shown, neither are they.
SAME_AS = {"update_gain": "p_com"}


def gated_names(statistic: str) -> tuple[str, ...]:
    """``statistic`` and every statistic stored with the same value under another name (:data:`SAME_AS`)."""
    return (statistic, *(alias for alias, same in SAME_AS.items() if same == statistic))


def ranking(kind: str) -> tuple[str, str]:
    """(primary, tie-breaker) statistic of a scenario kind: P_com then cross for one update, AC then AA for
    a sequence of models."""
    return kind_class(kind).ranking


def metric_name(metric: str) -> str:
    """How the leaderboard writes ``metric`` (``metrics.names``)."""
    return METRICS.get(metric, metric)


@dataclass(frozen=True)
class Column:
    metric: str  # retrieval metric of the matrix, e.g. cmc@1
    statistic: Statistic

    @property
    def id(self) -> str:
        return f"{self.metric}:{self.statistic.key}"

    @property
    def header(self) -> str:
        return f"{self.statistic.header} ({self.metric})"

    def format(self, value: float) -> str:
        return f"{value:.{self.statistic.digits}f}"


def columns_for(kind: str, metrics: list[str], held: set[tuple[str, str]] = frozenset()) -> list[Column]:
    """The papers' columns: self, cross, P_up, P_com per metric for one update (HBCT Table 1);
    AC, AA, ACA per metric for a sequence of models (IAM-CL2R Table 1, CoReS); then the flip rates of each
    metric that scores hits (a sequence's with its last model on the first gallery); then the live-gallery statistics (``metrics.live``) of the (metric, key) pairs in
    ``held``, those some record holds."""
    keys, sequence = kind_class(kind).statistics, not kind_class(kind).single_update
    return [Column(metric, STATISTICS[key]) for metric in metrics
            for key in (*keys, *((*flips.KEYS, *(flips.FIRST_KEYS if sequence else ())) if flips.defined_for(metric) else ()),
                        *(key for option in evaluations.EVALUATION_OPTIONS for key in option.keys
                          if (metric, key) in held))]
