"""The one rank fusion (oam_core/store/fusion.py, docs/retrieval.md): ``fuse``, the
``FusionConfig`` a HYBRID search fuses with, and the ``Distance`` a search returns."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oam_core.errors import InvalidArgumentError, OAMError
from oam_core.store.fusion import (
    DEFAULT_FUSION,
    OWN_TEXT_WEIGHT,
    RRF_K,
    SPEAKER_WEIGHT,
    Distance,
    DistanceKind,
    FusionConfig,
    Signal,
    fuse,
)

ranked_lists = st.lists(
    st.lists(st.integers(1, 12), unique=True, max_size=8), min_size=1, max_size=5
)
weights_of = st.floats(0.05, 3.0, allow_nan=False)


def test_fuse_sums_weighted_reciprocal_ranks_best_first() -> None:
    got = fuse([["a", "b", "c"], ["b", "d"]], [1.0, 0.5], rrf_k=5)
    want = {"a": 1 / 6, "b": 1 / 7 + 0.5 / 6, "c": 1 / 8, "d": 0.5 / 7}
    assert [k for k, _ in got] == ["b", "a", "c", "d"]
    assert dict(got) == pytest.approx(want)


def test_fuse_keeps_ties_in_first_seen_order() -> None:
    got = fuse([["x", "y"], ["y", "x"], ["z"]])
    assert [k for k, _ in got] == ["x", "y", "z"]
    assert got[0][1] == got[1][1] == pytest.approx(1 / (RRF_K + 1) + 1 / (RRF_K + 2))


@given(ranked_lists, st.data())
def test_fusing_onto_an_earlier_fusion_equals_fusing_everything_at_once(
    lists: list[list[int]], data: Any
) -> None:
    """The signal lists fused onto the text lists' scores give the very scores (to
    the last bit) of one fusion of all the lists, best first: search fuses each once.
    Only the order of equal scores may differ (first seen: ``onto``'s keys first)."""
    weights = data.draw(st.lists(weights_of, min_size=len(lists), max_size=len(lists)))
    cut = data.draw(st.integers(0, len(lists)))
    head = fuse(lists[:cut], weights[:cut])
    parts, whole = fuse(lists[cut:], weights[cut:], onto=head), fuse(lists, weights)
    assert dict(parts) == dict(whole)
    assert [score for _, score in parts] == [score for _, score in whole]


def test_default_config_holds_the_measured_weights() -> None:
    assert DEFAULT_FUSION.rrf_k == RRF_K == 5
    assert DEFAULT_FUSION.signals == frozenset(Signal)
    assert DEFAULT_FUSION.weight(Signal.SPEAKER) == SPEAKER_WEIGHT
    assert DEFAULT_FUSION.weight(Signal.OWN_TEXT) == OWN_TEXT_WEIGHT
    assert DEFAULT_FUSION.list_weight == 1.0 and DEFAULT_FUSION.index_weight == 2.0
    assert hash(DEFAULT_FUSION) == hash(FusionConfig())


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("rrf_k", 0),
        ("rrf_k", True),
        ("pool", 0),
        ("depth", 2.5),
        ("list_weight", 0),
        ("speaker_weight", -1.0),
        ("own_text_weight", "1"),
        ("signals", {Signal.DATE}),
        ("signals", frozenset({"date"})),
    ],
)
def test_a_bad_setting_is_refused_naming_it(field: str, value: object) -> None:
    with pytest.raises(InvalidArgumentError, match=field) as caught:
        FusionConfig(**{field: value})
    assert isinstance(caught.value, OAMError) and isinstance(caught.value, ValueError)


def test_a_distance_is_a_float_that_says_what_it_measures() -> None:
    d = Distance.of(0.25, DistanceKind.FUSED)
    assert isinstance(d, float) and d == 0.25 and d < 0.5
    assert d.kind is DistanceKind.FUSED and d.kind == "fused"
    assert repr(d) == "0.25" and json.dumps([d]) == "[0.25]"
    back = pickle.loads(pickle.dumps(d))
    assert back == 0.25 and back.kind is DistanceKind.FUSED
    assert 1.0 - d == 0.75 and type(1.0 - d) is float
    assert {Distance.of(0.5, kind).kind for kind in DistanceKind} == set(DistanceKind)


def test_first_in_every_list_is_exactly_distance_zero() -> None:
    """A record ranked first by every list scores the best possible sum, whose float
    sum may miss it in the last bit: its distance is exactly 0 (score 1.0)."""
    from oam_core.store.fusion import RRF_K, rrf_distance

    weights = [1.0, 0.5, 0.5, 0.1, 0.1]  # 1 - sum / best is 1.1e-16 in floats
    score = sum(w / (RRF_K + 1) for w in weights)
    assert rrf_distance(score, sum(weights)) == 0.0
    assert rrf_distance(score * 0.9, sum(weights)) > 0.09
