"""Per-query outcomes of one matrix entry, stored compactly in a cell's record.

A retrieval score is the mean of one outcome per query: a hit (CMC@k, template top-1) or an
average precision (mAP; NaN for a query without a relevant gallery item, skipped by the mean).
Keeping the outcomes lets the report bootstrap confidence intervals over queries. Hits are
packed eight to a byte, APs stored as float16, both base64-encoded.
"""
from __future__ import annotations

import base64

import numpy as np

from benchbackcompat.errors import BenchError

ENCODINGS = ("bits", "f16")


def encode(outcomes: np.ndarray) -> dict[str, object]:
    """``{"encoding", "n", "data"}`` for a 1-D array of per-query outcomes (booleans, or fractions in [0, 1])."""
    values = np.asarray(outcomes)
    if values.ndim != 1:
        raise BenchError(f"per-query outcomes must be 1-D, got shape {values.shape}")
    if values.dtype == bool:
        data, encoding = np.packbits(values).tobytes(), "bits"
    else:
        data, encoding = values.astype("<f2").tobytes(), "f16"
    return {"encoding": encoding, "n": int(values.shape[0]), "data": base64.b64encode(data).decode("ascii")}


def decode(stored: dict[str, object]) -> np.ndarray:
    """The per-query outcomes as float64 (hits as 0/1, APs as fractions, NaN for skipped queries)."""
    encoding, n = stored.get("encoding"), int(stored.get("n", -1))
    raw = base64.b64decode(str(stored.get("data", "")))
    if encoding == "bits":
        values = np.unpackbits(np.frombuffer(raw, dtype=np.uint8))[:n].astype(np.float64)
    elif encoding == "f16":
        values = np.frombuffer(raw, dtype="<f2").astype(np.float64)
    else:
        raise BenchError(f"unknown per-query outcome encoding {encoding!r}; expected one of {ENCODINGS}")
    if len(values) != n:
        raise BenchError(f"stored per-query outcomes hold {len(values)} values, expected {n} (corrupted record)")
    return values


def score(outcomes: np.ndarray) -> float:
    """The retrieval score (%) of per-query outcomes: 100 x their mean, skipping NaN."""
    values = np.asarray(outcomes, dtype=np.float64)
    counted = values[~np.isnan(values)]
    return 100.0 * float(counted.mean()) if len(counted) else float("nan")
