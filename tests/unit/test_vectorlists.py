"""The pure parts of the second-stage vector lists (store/vectorlists.py): the
feedback vector and the speaker's predicate."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from oam_core.apis._sentinel import NOT_SET
from oam_core.filters import Field, In, Nested, matches, parse_filter
from oam_core.store.backend import Predicate
from oam_core.store.naming import named_speaker
from oam_core.store.vectorlists import feedback_vector, speaker_predicate

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_the_feedback_vector_is_the_unit_sum_of_the_two_unit_directions() -> None:
    q = np.array([2.0, 0.0, 0.0], np.float32)
    head = [np.array([0.0, 3.0, 0.0], np.float32), np.array([0.0, 0.0, 1.0], np.float32)]
    got = feedback_vector(q, head)
    # unit(q) = e1; the unit mean of (e2, e3) is (e2 + e3) / sqrt(2).
    want = np.array([1.0, 1 / np.sqrt(2), 1 / np.sqrt(2)])
    np.testing.assert_allclose(got, want / np.linalg.norm(want), rtol=1e-6)
    assert got.dtype == np.float32
    assert np.linalg.norm(got) == pytest.approx(1.0, abs=1e-6)


def test_each_head_row_counts_once_whatever_its_length() -> None:
    q = np.array([1.0, 0.0], np.float32)
    short = feedback_vector(q, [np.array([0.0, 1.0]), np.array([1.0, 1.0])])
    long = feedback_vector(q, [np.array([0.0, 50.0]), np.array([0.1, 0.1])])
    np.testing.assert_allclose(short, long, rtol=1e-6)


def test_beta_weighs_the_heads_direction() -> None:
    q = np.array([1.0, 0.0], np.float32)
    head = [np.array([0.0, 1.0], np.float32)]
    np.testing.assert_allclose(feedback_vector(q, head, beta=0.0), [1.0, 0.0], atol=1e-7)
    half = feedback_vector(q, head, beta=0.5)
    np.testing.assert_allclose(half, np.array([1.0, 0.5]) / np.hypot(1.0, 0.5), rtol=1e-6)


def test_a_head_that_cancels_out_leaves_the_question() -> None:
    q = np.array([0.0, 2.0], np.float32)
    head = [np.array([1.0, 0.0]), np.array([-1.0, 0.0]), np.zeros(2)]
    np.testing.assert_allclose(feedback_vector(q, head), [0.0, 1.0], atol=1e-7)


def _pred(**kwargs: object) -> Predicate:
    kwargs.setdefault("record_types", frozenset({"message", "memory"}))
    return Predicate(now=NOW, **kwargs)  # type: ignore[arg-type]


def test_the_speakers_predicate_keeps_the_search_scope_and_narrows_to_her_messages() -> None:
    caller = parse_filter({"topic": "art"})
    got = speaker_predicate(_pred(user_id="u1", metadata=caller), {"Caroline", " Caroline "})
    assert got is not None
    assert got.record_types == frozenset({"message"})
    assert got.user_id == "u1"
    assert got.now == NOW
    named = In((" Caroline ", "Caroline"))
    assert got.metadata == (*caller, Field("$message", Nested((Field("name", named),))))
    assert matches({"topic": "art", "$message": {"name": "Caroline"}}, got.metadata)
    assert matches({"topic": "art", "$message": {"name": " Caroline "}}, got.metadata)
    assert not matches({"topic": "art", "$message": {"name": "Melanie"}}, got.metadata)
    assert not matches({"$message": {"name": "Caroline"}}, got.metadata)


def test_the_speakers_predicate_without_a_filter_and_where_no_message_can_pass() -> None:
    plain = speaker_predicate(_pred(), {"Ana"})
    assert plain is not None and plain.metadata is not NOT_SET
    assert matches({"$message": {"name": "Ana", "role": "user"}}, plain.metadata)
    # No name, only records without metadata, or no message type: nothing to rank.
    assert speaker_predicate(_pred(), set()) is None
    assert speaker_predicate(_pred(metadata=None), {"Ana"}) is None
    assert speaker_predicate(_pred(record_types=frozenset({"memory"})), {"Ana"}) is None


NFD_JOSE = "Jose\u0301"


@pytest.mark.parametrize(
    ("query", "names", "want"),
    [
        ("What did Caroline paint?", ["Caroline", "Melanie", None], {"Caroline"}),
        ("What did caroline paint?", ["Caroline"], {"Caroline"}),
        ("Did Caroline and Melanie meet?", ["Caroline", "Melanie"], set()),
        ("What did they paint?", ["Caroline", "Melanie"], set()),
        ("What did Jose cook?", ["José"], {"José"}),
        # The most complete naming wins over a name inside it.
        ("What did Mary Ann cook?", ["Mary Ann", "Ann"], {"Mary Ann"}),
        ("What did Ana Lopez think of it?", ["Ana", "Ana Lopez", "Ben"], {"Ana Lopez"}),
        ("What did Ana think of it?", ["Ana", "Ana Lopez", "Ben"], {"Ana"}),
        ("What did Mary cook?", ["Mary Ann"], set()),
        # Spellings that fold alike are one participant.
        ("What did Caroline paint?", ["Caroline", "caroline", "Melanie"], {"Caroline", "caroline"}),
        ("What did José cook?", ["José", NFD_JOSE], {"José", NFD_JOSE}),
        # A name that is a function word names only written as a name, past the start.
        ("Will it be sunny on Saturday?", ["Will", "Grace"], set()),
        ("will the weekend weather be nice?", ["Will", "Grace"], set()),
        ("What will Grace bring?", ["Will", "Grace"], {"Grace"}),
        ("What did Will say about the band?", ["Will", "Grace"], {"Will"}),
        ("May I ask what May cooked?", ["May", "Ann"], {"May"}),
        ("may I ask what you cooked?", ["May", "Ann"], set()),
        # First in any sentence, shouted, or every word capitalised: no name by capitals.
        ("Thanks. Will it be sunny on Saturday?", ["Will", "Grace"], set()),
        ("Thanks!\nWill it rain?", ["Will", "Grace"], set()),
        ("WHAT DID WILL SAY?", ["Will", "Grace"], set()),
        ("What Did Will Say About The Band?", ["Will", "Grace"], set()),
        ("Did I say that?", ["I", "Grace"], set()),
        # Other capitalised words (places, acronyms, sentence starts, the rest of a
        # name) do not make a plain question title-cased.
        ("Did Will like Rome?", ["Will", "Grace"], {"Will"}),
        ("Has May been to Rome?", ["May", "Grace"], {"May"}),
        ("What is Will's PIN code?", ["Will", "Grace"], {"Will"}),
        ("Thanks! Great. What did Will think?", ["Will", "Grace"], {"Will"}),
        ("What did Will Smith say about Rome?", ["Will Smith", "Grace"], {"Will Smith"}),
        ("What Did Will Say About Rome?", ["Will", "Grace"], set()),
        # A CJK name is named inside a sentence written without spaces.
        ("王伟觉得音乐会怎么样？", ["王伟", "李娜"], {"王伟"}),
        ("田中さんは何と言いましたか?", ["田中", "鈴木"], {"田中"}),
        ("김민수 씨는 뭐라고 했어요?", ["김민수", "이지은"], {"김민수"}),
        # ... but one CJK character alone is too often part of another word.
        ("王先生说了什么？", ["王", "李娜"], set()),
        ("WHAT DID CAROLINE SAY?", ["Caroline", "Melanie"], {"Caroline"}),
    ],
)
def test_named_speaker(query: str, names: list[str | None], want: set[str]) -> None:
    assert named_speaker(query, names) == frozenset(want)
