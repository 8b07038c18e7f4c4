"""IdentityMemo: a result is reused only for the very objects it was computed from."""
from __future__ import annotations

from benchbackcompat.runtime.memo import IdentityMemo


def test_a_result_is_reused_for_the_same_objects_and_computed_again_for_others():
    memo, calls = IdentityMemo(2), []

    def compute(value):
        calls.append(value)
        return value * 10

    a, b = [1], [1]  # equal, not the same object
    assert memo.get("k", (a,), lambda: compute(1)) == 10
    assert memo.get("k", (a,), lambda: compute(2)) == 10 and calls == [1]  # same object: remembered
    assert memo.get("k", (b,), lambda: compute(3)) == 30 and calls == [1, 3]  # an equal other object: computed
    assert memo.get("k", (b, a), lambda: compute(4)) == 40  # more sources: computed
    assert calls == [1, 3, 4]


def test_the_least_recently_used_result_goes_beyond_the_size():
    memo, calls, x = IdentityMemo(2), [], object()
    for key in ("a", "b", "a", "c"):  # "a" used again before "c" arrives: "b" is the least recently used
        memo.get(key, (x,), lambda key=key: calls.append(key) or key)
    assert calls == ["a", "b", "c"]
    memo.get("a", (x,), lambda: calls.append("a again"))
    memo.get("b", (x,), lambda: calls.append("b again"))
    assert calls == ["a", "b", "c", "b again"]
