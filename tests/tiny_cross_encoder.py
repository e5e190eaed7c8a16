"""A tiny real ONNX graph with the cross-encoder interface, for tests.

``build_model`` writes a model whose logit for a (query, passage) pair is the number
of passage-side word pieces (``token_type_ids`` 1) in a chosen word list, so tests
know every score exactly while running the real tokenisation and ONNX Runtime.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path

import numpy as np
import onnx
import tokenizers
from onnx import TensorProto, helper

TOKENIZER = Path(
    str(importlib.resources.files("oam_core.embedders").joinpath("data/tokenizer.json"))
)


def _vocab_ids(words: list[str]) -> list[int]:
    tok = tokenizers.Tokenizer.from_file(str(TOKENIZER))
    ids = [tok.token_to_id(w) for w in words]
    missing = [w for w, i in zip(words, ids, strict=True) if i is None]
    if missing:
        raise ValueError(f"not single word pieces of the vocabulary: {missing}")
    return ids


def build_model(
    path: Path,
    words: list[str],
    *,
    output: str = "n1",
    with_token_types: bool = True,
) -> str:
    """Write a cross-encoder-shaped ONNX model; return its sha256.

    logit(pair) = number of passage word pieces (token_type_id 1) in ``words``.
    ``output``: ``"n1"`` -> shape (n, 1); ``"n"`` -> (n,); ``"n2"`` -> (n, 2) with the
    logit in the last column.
    """
    vocab = 30522
    weights = np.zeros(vocab, dtype=np.float32)
    for i in _vocab_ids(words):
        weights[i] = 1.0
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n", "l"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["n", "l"]),
    ]
    if with_token_types:
        inputs.append(
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["n", "l"])
        )
    nodes = [
        helper.make_node("Gather", ["w", "input_ids"], ["g"]),
        helper.make_node("Cast", ["attention_mask"], ["m"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["g", "m"], ["gm"]),
    ]
    last = "gm"
    if with_token_types:
        nodes += [
            helper.make_node("Cast", ["token_type_ids"], ["t"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["gm", "t"], ["gmt"]),
        ]
        last = "gmt"
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes.append(helper.make_node("ReduceSum", [last, "axes"], ["s"], keepdims=1))
    shape = {"n1": ["n", 1], "n": ["n"], "n2": ["n", 2]}[output]
    if output == "n":
        nodes.append(helper.make_node("Squeeze", ["s", "axes"], ["logits"]))
    elif output == "n2":
        nodes.append(helper.make_node("Neg", ["s"], ["ns"]))
        nodes.append(helper.make_node("Concat", ["ns", "s"], ["logits"], axis=1))
    else:
        nodes.append(helper.make_node("Identity", ["s"], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, shape)],
        initializer=[helper.make_tensor("w", TensorProto.FLOAT, [vocab], weights), axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return hashlib.sha256(path.read_bytes()).hexdigest()
