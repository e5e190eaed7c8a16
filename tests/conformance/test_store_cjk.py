"""Store conformance: KEYWORD search in Chinese, Japanese and Korean (docs/failure-modes.md#c31).

A word inside a CJK sentence (no spaces between words) is found by KEYWORD and
HYBRID search on every back end, and ranks alike everywhere: the expected orders
below are written from the texts, not read from an implementation.
"""

from __future__ import annotations

import pytest

from oam_core.embedders.hashing import HashingEmbedder

CHINESE = {
    "zh-dog": "我的狗叫饼干，它每天早上都要吃骨头。",
    "zh-park": "今天天气很好，我们下午去公园散步了。",
    "zh-work": "我在北京的一家银行工作，已经五年了。",
    "zh-tea": "她更喜欢喝绿茶，不太喜欢喝咖啡。",
}
JAPANESE = {
    "ja-cat": "うちの猫はミケという名前で、魚が大好きです。",
    "ja-tokyo": "来月、東京で友達と会う予定があります。",
    "ja-coffee": "毎朝コーヒーを飲んでから会社に行きます。",
    "ja-rain": "昨日は雨が降ったので、家で本を読みました。",
}
MIXED = {
    "mix-python": "我每天用Python编程，也写一些Rust。",
    "mix-google": "彼はGoogleでエンジニアとして働いています。",
    "mix-en": "Meeting notes: 下周三 review the budget with 李经理.",
    "ko-cat": "우리 고양이가 생선을 좋아해요.",
}
ALL = {**CHINESE, **JAPANESE, **MIXED}


def found(results):
    return [r.id for r, _ in results]


@pytest.fixture
def cjk(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(list(ALL.values()), "memory", record_ids=list(ALL))
    return store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # Chinese: two-, one- and three-character words inside sentences.
        ("饼干", "zh-dog"),
        ("骨头", "zh-dog"),
        ("狗", "zh-dog"),
        ("公园", "zh-park"),
        ("北京", "zh-work"),
        ("银行", "zh-work"),
        ("绿茶", "zh-tea"),
        ("咖啡", "zh-tea"),
        ("散步", "zh-park"),
        # Japanese: kanji, katakana and kanji + kana words.
        ("猫", "ja-cat"),
        ("ミケ", "ja-cat"),
        ("名前", "ja-cat"),
        ("東京", "ja-tokyo"),
        ("友達", "ja-tokyo"),
        ("コーヒー", "ja-coffee"),
        ("雨", "ja-rain"),
        ("本を読む", "ja-rain"),
        # Mixed CJK and Latin; Korean (particles attached to the noun).
        ("Python", "mix-python"),
        ("编程", "mix-python"),
        ("rust", "mix-python"),
        ("Google", "mix-google"),
        ("エンジニア", "mix-google"),
        ("budget", "mix-en"),
        ("经理", "mix-en"),
        ("고양이", "ko-cat"),
        ("생선", "ko-cat"),
    ],
)
def test_c31_a_word_inside_a_cjk_sentence_is_found(cjk, query, expected):
    results = cjk.search(query, 3)
    assert found(results)[:1] == [expected]
    assert all(0.0 <= d <= 1.0 for _, d in results)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("我的狗叫什么名字？", "zh-dog"),
        ("你们下午去哪里散步？", "zh-park"),
        ("她喜欢喝什么茶？", "zh-tea"),
        ("猫の名前は何ですか？", "ja-cat"),
        ("東京で誰と会いますか", "ja-tokyo"),
        ("毎朝何を飲みますか", "ja-coffee"),
        ("Who writes Python and Rust?", "mix-python"),
    ],
)
def test_c31_a_question_finds_its_sentence_first(cjk, query, expected):
    assert found(cjk.search(query, 3))[0] == expected


def test_c31_more_shared_pairs_rank_first(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(
        ["北京大学的图书馆很大。", "我去过北京。", "图书馆今天不开门。", "上海的天气很热。"],
        "memory",
        record_ids=["both", "beijing", "library", "other"],
    )
    results = store.search("北京的图书馆", 10)
    assert found(results)[0] == "both"
    assert set(found(results)) == {"both", "beijing", "library"}
    distances = [d for _, d in results]
    assert distances == sorted(distances) and distances[0] < distances[-1]


def test_c31_half_width_katakana_and_decomposed_kana_match_their_normal_forms(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["コーヒーとガム", "紅茶"], "memory", record_ids=["full", "tea"])
    assert found(store.search("ｺｰﾋｰ", 5)) == ["full"]  # half-width katakana
    assert found(store.search("ｶﾞﾑ", 5)) == ["full"]  # half-width with a voicing mark
    assert found(store.search("カ\u3099ム", 5)) == ["full"]  # か + combining mark


def test_c31_updates_and_deletes_leave_no_stale_cjk_words(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["我的狗叫饼干。", "我的猫叫豆豆。"], "memory", record_ids=["a", "b"])
    store.update("memory", "a", text="我的鸟叫小黄。")
    assert found(store.search("饼干", 5)) == []
    assert found(store.search("小黄", 5)) == ["a"]
    store.delete("memory", "b")
    assert found(store.search("豆豆", 5)) == []
    assert found(store.search("我的", 5)) == ["a"]


def test_c31_scope_and_type_filters_apply_to_cjk_matches(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["东京的寿司很好吃。"], "memory", record_ids="m-u1", user_ids="u1")
    store.add(["东京的拉面也不错。"], "memory", record_ids="m-u2", user_ids="u2")
    store.add(["东京塔很高。"], "fact", record_ids="f-u1", user_ids="u1")
    assert sorted(found(store.search("东京", 10, user_id="u1", exact_user_match=True))) == [
        "f-u1",
        "m-u1",
    ]
    assert found(
        store.search("东京", 10, record_types={"memory"}, user_id="u2", exact_user_match=True)
    ) == ["m-u2"]


def test_c31_hybrid_finds_cjk_words_through_its_keyword_half(make_store):
    embedder = HashingEmbedder(64)
    store = make_store(search_strategy="HYBRID", embedder=embedder)
    store.add(list(ALL.values()), "memory", record_ids=list(ALL))
    for query, expected in [("饼干", "zh-dog"), ("ミケ", "ja-cat"), ("编程", "mix-python")]:
        assert expected in found(store.search(query, 3))


def test_c31_a_chinese_word_is_found_among_many_rows(make_store):
    # Enough rows that the pair 天气 is informative and common pairs are not.
    store = make_store(search_strategy="KEYWORD", embedder=None)
    fillers = [f"第{i}条消息：我们讨论了项目的进度。" for i in range(60)]
    store.add(
        [*fillers, "明天的天气怎么样？"],
        "memory",
        record_ids=[*(f"f{i}" for i in range(60)), "weather"],
    )
    assert found(store.search("天气", 5)) == ["weather"]
    assert found(store.search("项目天气", 1)) == ["weather"]
