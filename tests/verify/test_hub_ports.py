"""Ports written by a model library (issue 42 item 6): keras-hub's backbones as keras-hub converts them from tiny
Hugging Face checkpoints built here with seeded weights (tests/verify/ports/library_hub.py), against transformers'
models loaded from the same checkpoints. keras-hub's blocks are single Keras layers (TransformerEncoder,
TransformerDecoder) with sublayers, its inputs and outputs dicts under names of its own (token_ids, segment_ids,
padding_mask), paired with transformers' (input_ids, token_type_ids, attention_mask) by --pair, since all are
integer tensors of one shape. Each correct port PASSes; each bug seeded inside a block FAILs and is located at the
segment that holds it, its cause named, and never at the embeddings or at the other block (0 wrong
localisations, as in test_unaligned_ports.py)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import shared_folder
from tests.verify.ports.checks import PASS, verify_ports

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(module) is None for module in ("keras_hub", "transformers")),
    reason="keras-hub or transformers not installed (keras-hub needs Python 3.11+)")

HERE = Path(__file__).parent / "ports"


def _build(folder: Path) -> None:
    """The checkpoints, the PyTorch factories that load them (hub_nets.py) and keras-hub's ports."""
    subprocess.run([sys.executable, str(HERE / "library_hub.py"), str(folder)], check=True, capture_output=True,
                   timeout=600)


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Path:
    return shared_folder(tmp_path_factory, "hub-ports", _build)


def tokens(*specs: str) -> list[str]:
    return [option for spec in specs for option in ("--input", spec)]


def pairs(*texts: str) -> list[str]:
    return [option for text in texts for option in ("--pair", text)]


BERT_EMBEDDINGS = {"embeddings", "embeddings.word_embeddings", "embeddings.position_embeddings",
                   "embeddings.token_type_embeddings", "embeddings.LayerNorm", "token_embedding",
                   "position_embedding", "segment_embedding", "embeddings_add", "embeddings_layer_norm"}
GPT2_EMBEDDINGS = {"wte", "wpe", "drop", "token_embedding", "position_embedding", "embeddings_add"}
LLAMA_EMBEDDINGS = {"embed_tokens", "rotary_emb", "token_embedding"}
VIT_EMBEDDINGS = {"vit.embeddings", "vit.embeddings.patch_embeddings", "vit.embeddings.patch_embeddings.projection",
                  "vit_patching_and_embedding", "vit_patching_and_embedding/patch_embedding"}
# (reference factory, its inputs and the pairing with the port's, {port: (verdict, reference modules of which one
#  must be in segment["reference"], port layers of which one must be in segment["port"], a phrase of the
#  diagnosis, correct modules and layers that neither side of the segment may hold)})
HUB = {
    "bert": ("hub_nets.py:bert",
             tokens("input_ids:Nx16:int64:0:64", "token_type_ids:Nx16:int64:0:2", "attention_mask:Nx16:int64:0:2")
             + pairs("input_ids=token_ids", "token_type_ids=segment_ids", "attention_mask=padding_mask"), {
        # BertBackbone as keras-hub converts and saves it (its pooled_output has no counterpart: not compared)
        "bert-port.keras": PASS,
        # block 1's layer-norm epsilon 1e-3 (the checkpoint's 1e-12): in block 1, not block 0 or the embeddings
        "bert-port-epsilon.keras": (
            "FAIL", {"encoder.layer.1.attention.output.LayerNorm", "encoder.layer.1.output.LayerNorm"},
            {"transformer_layer_1", "transformer_layer_1/self_attention_layer_norm",
             "transformer_layer_1/feedforward_layer_norm"}, "epsilon",
            BERT_EMBEDDINGS | {"encoder.layer.0", "encoder.layer.0.output.LayerNorm", "transformer_layer_0",
                               "transformer_layer_0/feedforward_layer_norm"}),
        # block 0's query kernel transposed: at block 0's query, not the embeddings before it nor block 1
        "bert-port-query.keras": (
            "FAIL", {"encoder.layer.0.attention.self.query"},
            {"transformer_layer_0", "transformer_layer_0/self_attention_layer",
             "transformer_layer_0/self_attention_layer/query"}, "transposed",
            BERT_EMBEDDINGS | {"encoder.layer.1", "encoder.layer.1.attention.self.query",
                               "encoder.layer.1.attention.self.key", "transformer_layer_1",
                               "transformer_layer_1/self_attention_layer/query"})}),
    "gpt2": ("hub_nets.py:gpt2",
             tokens("input_ids:Nx16:int64:0:64", "attention_mask:Nx16:int64:0:2")
             + pairs("input_ids=token_ids", "attention_mask=padding_mask"), {
        # GPT2Backbone as keras-hub converts and saves it
        "gpt2-port.keras": PASS,
        # block 1's layer-norm epsilon 1e-3 (the checkpoint's 1e-5): in block 1
        "gpt2-port-epsilon.keras": (
            "FAIL", {"h.1.ln_1", "h.1.ln_2"},
            {"transformer_layer_1", "transformer_layer_1/self_attention_layer_norm",
             "transformer_layer_1/feedforward_layer_norm"}, "epsilon",
            GPT2_EMBEDDINGS | {"h.0", "h.0.ln_1", "h.0.ln_2", "transformer_layer_0"}),
        # block 0's query kernel transposed: at block 0's fused c_attn (query, key and value in one Conv1D, whose
        # query third the port's query kernel is, transposed)
        "gpt2-port-query.keras": (
            "FAIL", {"h.0.attn.c_attn"},
            {"transformer_layer_0", "transformer_layer_0/self_attention",
             "transformer_layer_0/self_attention/query"}, "transposed",
            GPT2_EMBEDDINGS | {"h.1", "h.1.ln_1", "h.1.attn.c_attn", "transformer_layer_1",
                               "transformer_layer_1/self_attention/query"})}),
    "llama": ("hub_nets.py:llama",
              tokens("input_ids:Nx16:int64:0:64", "attention_mask:Nx16:int64:0:2")
              + pairs("input_ids=token_ids", "attention_mask=padding_mask"), {
        # Llama3Backbone as keras-hub converts and saves it (rotary embeddings computed inside each attention
        # layer, against transformers' one rotary_emb module for the whole model; RMSNorm, SwiGLU, 4 query heads
        # sharing 2 key/value heads)
        "llama-port.keras": PASS,
        # the RMSNorm epsilon 1e-3 in every block (the checkpoint's 1e-6): at block 0's first norm, never at the
        # rotary table (the same for every sample, computed once by the reference and per block by the port)
        "llama-port-epsilon.keras": (
            "FAIL", {"layers.0.input_layernorm"},
            {"transformer_layer_0", "transformer_layer_0/self_attention_layernorm"}, "epsilon",
            LLAMA_EMBEDDINGS | {"layers.1", "layers.1.input_layernorm", "layers.0.post_attention_layernorm",
                                "transformer_layer_1", "transformer_layer_0/feedforward_layernorm"}),
        # block 0's query kernel transposed
        "llama-port-query.keras": (
            "FAIL", {"layers.0.self_attn.q_proj"},
            {"transformer_layer_0", "transformer_layer_0/self_attention",
             "transformer_layer_0/self_attention/query"}, "transposed",
            LLAMA_EMBEDDINGS | {"layers.0.input_layernorm", "layers.1", "layers.1.self_attn.q_proj",
                                "transformer_layer_1", "transformer_layer_1/self_attention/query"})}),
    # ViT: NCHW pixels against keras-hub's NHWC images (the pairing's permutation); keras-hub's blocks are nested
    # two deep (vit_encoder/transformer_block_1, numbered from 1, against transformers' vit.layers.0)
    "vit": ("hub_nets.py:vit", ["--input", "pixel_values:Nx3x32x32:float32", "--pair",
                                "pixel_values=images:0,2,3,1"], {
        # as keras-hub converts it: its ViTBackbone keeps LayerNorm epsilon 1e-6 where the checkpoint says 1e-12
        # (convert_vit.py does not read layer_norm_eps), a real converter bug: at block 0's first LayerNorm
        "vit-port.keras": (
            "FAIL", {"vit.layers.0.layernorm_before"},
            {"vit_encoder/transformer_block_1", "vit_encoder/transformer_block_1/ln_1"}, "epsilon 1e-06 here, 1e-12",
            VIT_EMBEDDINGS | {"vit.layers.1", "vit_encoder/transformer_block_2"}),
        # the same conversion given the checkpoint's epsilon
        "vit-port-fixed.keras": PASS,
        # ... with block 1's query and key projections swapped (kernels and biases)
        "vit-port-swapped.keras": (
            "FAIL", {"vit.layers.1", "vit.layers.1.attention.q_proj", "vit.layers.1.attention.k_proj"},
            {"vit_encoder/transformer_block_2", "vit_encoder/transformer_block_2/mha",
             "vit_encoder/transformer_block_2/mha/query"}, "query and key projections swapped",
            VIT_EMBEDDINGS | {"vit.layers.0", "vit.layers.0.layernorm_before", "vit.layers.0.attention.q_proj",
                              "vit_encoder/transformer_block_1", "vit_encoder/transformer_block_1/ln_1"})}),
}


# what rosetta does not do yet, each checked to still be the only gap (the row is located in its block, never at a
# correct layer; only its cause is not named): a test that says so when it is fixed
KNOWN_GAPS: dict[str, str] = {}  # GPT-2's fused c_attn was one (now read in thirds: diagnoses.matching)


@pytest.mark.parametrize("family", HUB)
def test_hub_ports_verify_and_every_bug_is_located_in_its_block(family, hub, tmp_path, monkeypatch):
    monkeypatch.chdir(hub)  # the factories are named as a user in that folder names them
    reference, options, expected = HUB[family]
    found = verify_ports(reference, options, expected, tmp_path / "r.json")
    fixed = [port for port in KNOWN_GAPS if port in found and not found[port]]
    assert not fixed, f"{fixed}: now as the issue wants; take them out of KNOWN_GAPS"
    wrong = [problem for port, problems in found.items() if port not in KNOWN_GAPS for problem in problems]
    assert not wrong, "\n".join(wrong)
    for port in set(KNOWN_GAPS) & set(found):  # still located in its block, never at a correct layer
        assert all("does not say" in problem for problem in found[port]), found[port]
