"""``CrossEncoderReranker`` on a real ONNX Runtime session (docs/retrieval.md).

No cross-encoder weights ship in a wheel here, so the tests build a tiny real ONNX
graph with the cross-encoder interface (``input_ids``, ``attention_mask``,
``token_type_ids`` -> one logit per pair): the logit counts the passage-side word
pieces that belong to a chosen word list. That makes every expected score exact and
exercises the real tokenisation of pairs, batching, truncation, the sha256 pin and
the output shapes.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
tokenizers = pytest.importorskip("tokenizers")

from onnx import TensorProto, helper  # noqa: E402

from oam_core import SQLiteMemoryStore  # noqa: E402
from oam_core.embedders import HashingEmbedder  # noqa: E402
from oam_core.rerankers import CrossEncoderReranker, IReranker  # noqa: E402
from oam_core.rerankers import crossencoder as ce_mod  # noqa: E402
from tests.tiny_cross_encoder import TOKENIZER, build_model  # noqa: E402


@pytest.fixture
def puppy_model(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "model.onnx"
    return path, build_model(path, ["puppy", "sunny"])


def test_scores_count_the_passage_side_only(puppy_model: tuple[Path, str]) -> None:
    path, sha = puppy_model
    reranker = CrossEncoderReranker(path, TOKENIZER, sha256=sha, batch_size=2)
    assert isinstance(reranker, IReranker)
    # "puppy" in the query (token type 0) does not count; the passage's words do.
    scores = reranker.score(
        "what is the puppy named?",
        ["Kyoto temples", "a puppy named sunny", "puppy puppy puppy", ""],
    )
    assert scores.dtype == np.float32
    assert scores.tolist() == [0.0, 2.0, 3.0, 0.0]
    assert reranker.score("q", []).shape == (0,)


@pytest.mark.parametrize("output", ["n", "n2"])
def test_output_shapes(tmp_path: Path, output: str) -> None:
    path = tmp_path / "m.onnx"
    sha = build_model(path, ["puppy"], output=output)
    reranker = CrossEncoderReranker(path, TOKENIZER, sha256=sha)
    assert reranker.score("q", ["puppy", "cat"]).tolist() == [1.0, 0.0]


def test_graph_without_token_types(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    sha = build_model(path, ["puppy"], with_token_types=False)
    reranker = CrossEncoderReranker(path, TOKENIZER, sha256=sha)
    # Without segment ids every word piece counts, the query's too.
    assert reranker.score("puppy", ["puppy", "cat"]).tolist() == [2.0, 1.0]


def test_long_pairs_are_truncated_to_max_length(puppy_model: tuple[Path, str]) -> None:
    path, sha = puppy_model
    reranker = CrossEncoderReranker(path, TOKENIZER, sha256=sha, max_length=16)
    # 16 pieces: [CLS] q [SEP] + 12 passage pieces + [SEP]; the longer side is cut.
    assert reranker.score("q", ["puppy " * 100]).tolist() == [12.0]


def test_sha256_pin_is_enforced(puppy_model: tuple[Path, str]) -> None:
    path, sha = puppy_model
    wrong = CrossEncoderReranker(path, TOKENIZER, sha256="0" * 64)
    with pytest.raises(RuntimeError, match=rf"sha256 {sha}, expected 0{{64}}"):
        wrong.score("q", ["puppy"])
    with pytest.raises(RuntimeError):  # not cached: checked again
        wrong.load()
    CrossEncoderReranker(path, TOKENIZER, sha256=sha.upper()).load()


def test_missing_files(tmp_path: Path) -> None:
    reranker = CrossEncoderReranker(tmp_path / "none.onnx", TOKENIZER, sha256="a" * 64)
    with pytest.raises(FileNotFoundError, match=r"none\.onnx"):
        reranker.load()


def test_not_a_cross_encoder(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(RuntimeError, match="not a cross-encoder"):
        CrossEncoderReranker(path, TOKENIZER, sha256=sha).load()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sha256": "xyz"},
        {"sha256": "g" * 64},
        {"sha256": "a" * 64, "candidates": 0},
        {"sha256": "a" * 64, "candidates": True},
        {"sha256": "a" * 64, "max_length": 4},
        {"sha256": "a" * 64, "batch_size": 0},
        {"sha256": "a" * 64, "num_threads": 0},
    ],
)
def test_bad_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        CrossEncoderReranker("m.onnx", TOKENIZER, **kwargs)  # type: ignore[arg-type]


def test_bad_texts(puppy_model: tuple[Path, str]) -> None:
    path, sha = puppy_model
    reranker = CrossEncoderReranker(path, TOKENIZER, sha256=sha)
    with pytest.raises(TypeError):
        reranker.score("q", "puppy")
    with pytest.raises(TypeError):
        reranker.score("q", ["puppy", 3])  # type: ignore[list-item]


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "onnxruntime" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ce_mod.importlib.util, "find_spec", find_spec)
    with pytest.raises(ImportError, match=r'onnxruntime.*pip install "oam\[rerank\]"'):
        CrossEncoderReranker("m.onnx", TOKENIZER, sha256="a" * 64)


def test_store_search_with_the_cross_encoder(puppy_model: tuple[Path, str]) -> None:
    """A store built with ``reranker=`` returns the re-scored order."""
    path, sha = puppy_model
    reranker = CrossEncoderReranker(path, TOKENIZER, sha256=sha, candidates=5)
    store = SQLiteMemoryStore(
        ":memory:", embedder=HashingEmbedder(32), search_strategy="HYBRID", reranker=reranker
    )
    store.add(
        ["Kyoto has old temples.", "We adopted a puppy.", "Our puppy Sunny loves the park."],
        "memory",
        record_ids=["kyoto", "adopted", "sunny"],
    )
    results = store.search("Tell me about the dog", k=3)
    assert [r.id for r, _ in results] == ["sunny", "adopted", "kyoto"]
    distances = [d for _, d in results]
    expected = [1 / (1 + np.exp(2.0)), 1 / (1 + np.exp(1.0)), 0.5]
    assert distances == pytest.approx(expected)
