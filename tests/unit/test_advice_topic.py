"""The topic vector of an advice question (oam_core/store/advice.py,
docs/retrieval.md#advice-questions-and-stated-preferences): the frame, what a HYBRID
search embeds, the vectors and weights it ranks by."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oam_core.errors import InvalidArgumentError
from oam_core.store.advice import (
    FRAME_WEIGHT,
    TOPIC_SHARE,
    advice_frame,
    frame_removed,
    search_texts,
    search_vectors,
)
from oam_core.store.fusion import DEFAULT_FUSION, FusionConfig, list_weights

COLORADO = "I'm planning a trip to Colorado. What would you recommend for me?"


@pytest.mark.parametrize(
    ("query", "frame"),
    [
        (COLORADO, "I'm a to . What would you recommend for me ?"),
        ("What are some resources for learning data analysis?", "What are some for ?"),
        ("Can you suggest a pet for my family?", "Can you suggest a for my ?"),
        ("Any tips?", "Any tips ?"),
        # A typographic apostrophe is a plain one.
        ("I\u2019m off to Rome: any ideas for me?", "I\u2019m off to : any ideas for me ?"),
        ("Colorado Rockies", ""),
        ("???", ""),
        ("", ""),
        ("我的猫叫什么名字", ""),
    ],
)
def test_the_frame_keeps_the_words_that_ask(query: str, frame: str) -> None:
    assert advice_frame(query) == frame


def test_an_advice_question_with_a_topic_also_embeds_its_frame() -> None:
    assert search_texts(COLORADO, [COLORADO]) == [COLORADO, advice_frame(COLORADO)]
    # In parts, the frame is cut at a space to the longest part's length (32).
    parts = ["I'm planning a trip to Colorado.", "What would you recommend for me?"]
    assert search_texts(COLORADO, parts) == [*parts, "I'm a to . What would you"]


@pytest.mark.parametrize(
    "query",
    [
        "What did Caroline recommend?",  # not advice: what someone else said
        "Where did we go hiking in Colorado?",  # not advice at all
        "What should I do?",  # advice, but every word is the frame: no topic
    ],
)
def test_other_queries_embed_their_parts_only(query: str) -> None:
    assert search_texts(query, [query]) == [query]


def test_a_topic_in_another_script_is_a_topic() -> None:
    query = "Can you recommend 我的猫 a name?"
    assert search_texts(query, [query]) == [query, "Can you recommend a ?"]


def test_the_frame_of_a_long_query_is_no_longer_than_its_longest_part() -> None:
    query = "Any tips for my cat Whiskers? " * 200
    parts = ["Any tips for my cat Whiskers? " * 10] * 20
    texts = search_texts(query, parts)
    frame = texts[-1]
    assert texts[:-1] == parts
    assert len(frame) <= len(parts[0]) and frame.startswith("Any tips for my ? Any tips")
    assert advice_frame(query).startswith(frame)


def test_the_step_can_be_switched_off() -> None:
    assert search_texts(COLORADO, [COLORADO], FusionConfig(advice_topic=False)) == [COLORADO]
    with pytest.raises(InvalidArgumentError, match="advice_topic"):
        FusionConfig(advice_topic=1)  # type: ignore[arg-type]


def test_the_topic_vector_is_the_question_less_its_frame() -> None:
    q = np.array([3.0, 4.0], dtype=np.float32)  # unit: (0.6, 0.8)
    f = np.array([0.0, 2.0], dtype=np.float32)  # unit: (0, 1)
    (topic,) = frame_removed([q], f)
    assert FRAME_WEIGHT == 1.0
    np.testing.assert_allclose(topic, [0.6, -0.2], atol=1e-6)
    (half,) = frame_removed([q], f, 0.5)
    np.testing.assert_allclose(half, [0.6, 0.3], atol=1e-6)
    assert topic.dtype == np.float32


def test_a_zero_vector_or_a_question_that_is_its_frame_keeps_its_vector() -> None:
    q = np.array([1.0, 0.0], dtype=np.float32)
    zero = np.zeros(2, dtype=np.float32)
    for vector, frame in ((q, zero), (zero, q), (q, 2 * q)):
        (out,) = frame_removed([vector], frame)
        np.testing.assert_array_equal(out, vector)


def test_search_vectors_adds_one_topic_vector_per_part_at_half_weight() -> None:
    a = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    f = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    vectors, share = search_vectors([a, b, f], 2)
    assert share == TOPIC_SHARE == 0.5
    assert len(vectors) == 4
    np.testing.assert_array_equal(vectors[0], a)
    np.testing.assert_array_equal(vectors[1], b)
    np.testing.assert_allclose(vectors[2], [1.0, 0.0, -1.0])
    np.testing.assert_allclose(vectors[3], [0.0, 1.0, -1.0])
    # No frame embedded (not advice), or no embedder: the vectors as they are.
    assert search_vectors([a, b], 2) == ([a, b], 1.0)
    assert search_vectors([], 1) == ([], 1.0)


def test_the_two_vector_lists_weigh_what_one_did() -> None:
    weights = list_weights(COLORADO, 2, 1, DEFAULT_FUSION, vector_share=TOPIC_SHARE)
    assert weights == [0.5, 0.5, 0.1]
    assert list_weights(COLORADO, 1, 1, DEFAULT_FUSION) == [1.0, 0.1]


@given(st.text(max_size=300))
def test_any_text_has_a_frame_made_of_its_own_tokens(text: str) -> None:
    frame = advice_frame(text)
    assert isinstance(frame, str)
    texts = search_texts(text, [text])
    assert texts[0] == text and len(texts) in (1, 2)
    if len(texts) == 2:
        assert texts[1] == frame and frame
