"""Hugging Face transformers models exported as rosetta exports them (rosetta.frameworks.transformers): the
attention masks as plain arithmetic, verified against the model as built, whose attention is put back."""

from __future__ import annotations

import importlib.util

import onnx
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="transformers not installed")

# what transformers 5's own mask builders and SDPA export as, which no target but ONNX Runtime converts
MASK_MACHINERY = {"Range", "GatherElements", "And", "IsNaN", "GreaterOrEqual", "LessOrEqual"}


def tiny(kind: str):
    import torch

    from rosetta.frameworks.torchvision import make_importable

    make_importable()  # transformers imports torchvision
    import transformers

    torch.manual_seed(0)
    if kind == "bert":
        config = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                         intermediate_size=32, max_position_embeddings=32, num_labels=3)
        return transformers.BertForSequenceClassification(config).eval()
    config = transformers.GPT2Config(vocab_size=50, n_embd=16, n_layer=1, n_head=2, n_positions=32, bos_token_id=0,
                                     eos_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.mark.parametrize("kind, inputs", [
    ("bert", ["input_ids:Nx8:int64:0:50", "attention_mask:Nx8:int64:0:2", "token_type_ids:Nx8:int64:0:2"]),
    ("gpt2", ["input_ids:Nx8:int64:0:50", "attention_mask:Nx8:int64:0:2"]),
])
def test_masks_export_as_arithmetic_and_the_model_keeps_its_attention(kind, inputs, tmp_path):
    import rosetta

    model = tiny(kind)
    implementation = model.config._attn_implementation
    conversion = rosetta.convert(model, "onnx,torch", inputs=inputs, output_dir=tmp_path / "out")
    assert conversion.passed, conversion.report.message()
    graph = onnx.load(str(tmp_path / "out" / "onnx" / "model.onnx"))
    assert not {node.op_type for node in graph.graph.node} & MASK_MACHINERY
    assert [output.name for output in graph.graph.output] == ["logits"]  # a ModelOutput's tensors, by key
    assert model.config._attn_implementation == implementation


def test_a_mask_function_that_reads_the_batch_index_is_left_to_transformers():
    import torch

    from rosetta.frameworks.transformers import additive_mask

    def transformers_own(**arguments):
        return "transformers' own"

    def per_sequence(batch_idx, head_idx, q_idx, kv_idx):
        return torch.tensor([True, False])[batch_idx] & (kv_idx <= q_idx)

    assert additive_mask(transformers_own, 2, 4, 4, mask_function=per_sequence) == "transformers' own"
    causal = additive_mask(transformers_own, 2, 3, 3, mask_function=lambda b, h, q, kv: kv <= q)
    assert causal.shape == (1, 1, 3, 3) and causal[0, 0, 0, 1] == torch.finfo(torch.float32).min
    assert causal[0, 0, 1, 0] == 0


def test_a_mixture_of_experts_exports_with_batched_experts_and_keeps_its_own(tmp_path):
    """Issue 45: transformers' default experts ("grouped_mm") count tokens per expert with torch.histc, which
    neither torch.onnx exporter takes (AFMoE: every target CANNOT). Exported as "batched_mm", the same function,
    it PASSes against the model as built, whose own implementation is put back."""
    import torch

    import rosetta
    from rosetta.frameworks.torchvision import make_importable

    make_importable()
    import transformers

    torch.manual_seed(0)
    config = transformers.MixtralConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=1, num_local_experts=4,
                                        num_experts_per_tok=2, max_position_embeddings=32)
    model = transformers.MixtralModel(config).eval()
    implementation = model.config._experts_implementation
    assert implementation not in (None, "batched_mm"), "the case no longer starts from an unexportable default"
    conversion = rosetta.convert(model, "onnx", inputs=["input_ids:Nx8:int64:0:50"], output_dir=tmp_path / "out")
    assert conversion.passed, conversion.report.message()
    assert model.config._experts_implementation == implementation
