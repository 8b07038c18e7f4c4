"""The evaluation options' registry against the models that declare them, and the metric names against the
scorers; a record's option statistics read through the registry, checked by hand."""
from __future__ import annotations

import types
import typing

import pytest

from benchbackcompat import evaluations
from benchbackcompat.config import RetrievalMetric
from benchbackcompat.metrics import protocols
from benchbackcompat.metrics.names import METRICS
from benchbackcompat.record import FinishedRecord, parse_record
from benchbackcompat.report.columns import LIVE, STATISTICS, metric_name
from benchbackcompat.scenarios.kinds import ScenarioBase


def test_every_option_is_a_scenario_field_a_record_field_and_a_view():
    assert evaluations.NAMES == ("backfill", "index")
    for option in evaluations.EVALUATION_OPTIONS:
        annotation = ScenarioBase.model_fields[option.name].annotation
        assert typing.get_origin(annotation) in (typing.Union, types.UnionType)
        assert set(typing.get_args(annotation)) == {option.config, type(None)}  # off unless set
        assert option.name in ScenarioBase.untrained_fields and option.name in FinishedRecord.model_fields
        assert all(STATISTICS[key].view == option.view for key in option.keys)
    assert LIVE == ("backfilling", "retrieval through an index")


def test_the_metric_names_are_those_the_scorers_score():
    assert set(typing.get_args(RetrievalMetric)) == set(METRICS) == {metric for _, metric in protocols.SCORERS}
    assert metric_name("map@r") == "mAP@R" and metric_name("cmc@1") == "CMC@1"
    with pytest.raises(ValueError, match="metric recall@3: not in metrics.names.METRICS"):
        protocols.scores("nn", "recall@3")


def test_a_records_option_statistics_by_hand():
    from test_readings import _single

    record = _single("l2", 0, 100, 75, 82, 70, 75, 82)
    record["matrices"] = {"cmc@1": [[75.0, None], [70.0, 82.0]]}
    record["backfill"] = {"pairs": [{"old": 0, "new": 1, "fractions": [0.0, 0.5, 1.0],
                                     "curves": {"cmc@1": {"random": [70.0, 60.0, 82.0]}},
                                     "auc": {"cmc@1": {"random": 68.0}}}]}
    record["index"] = {"matrices": {"flat": {"cmc@1": [[74.0, None], [68.0, 82.0]]}}}
    found = evaluations.statistics(parse_record(record), "cmc@1")
    # lowest point 60 at 50% refreshed, 15 points below the old self-test 75; index: 70 - 68, ((75-74) + (82-82)) / 2
    assert found == {"auc_random": 68.0, "dip_random": -15.0, "dip_at_random": 50.0, "gap_cross_flat": 2.0,
                     "gap_self_flat": 0.5}
    assert list(found) == ["auc_random", "dip_random", "dip_at_random", "gap_cross_flat", "gap_self_flat"]
