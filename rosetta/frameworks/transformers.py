"""Hugging Face transformers models, as rosetta exports them to ONNX.

transformers 5 builds every attention mask by evaluating a mask function (causal, bidirectional, sliding
window) on index grids, with the padding mask read by advanced indexing at [batch index, key index], and with
scaled_dot_product_attention by default. torch.onnx writes that as Range over the run-time batch size,
GatherElements, Expand, Equal, And, GreaterOrEqual, and (for SDPA's fully masked rows) IsNaN and Where: ops
no target but ONNX Runtime converts, in a BERT as in a GPT-2. transformers 4 wrote the same mask as
(1 - padding) * min, which every target converts.

`plain_attention_masks` exports such a model that way: while torch.onnx traces it, its attention runs in
transformers' own eager form, whose mask builder is rosetta's `additive_mask`: the model's mask function
evaluated on the constant query and key positions (their lengths are static at export), times the padding
mask's columns, as an additive float mask (0 where attended, the dtype's minimum elsewhere, as eager_mask
makes it). The exported graph is verified against the model as the user built it (SDPA, transformers' masks),
so a difference would be a FAIL, not hidden. A mask function that reads the batch index (packed sequences,
chunked attention with left padding) or a vmap'ed one is left to transformers' own builder."""

from __future__ import annotations

import contextlib
from typing import Iterator


def hugging_face_models(module) -> list:
    """The transformers PreTrainedModels in `module` (itself or its submodules), outermost first."""
    return [m for m in module.modules()
            if any(cls.__name__ == "PreTrainedModel" and cls.__module__.startswith("transformers.")
                   for cls in type(m).__mro__)]


@contextlib.contextmanager
def plain_attention_masks(module) -> Iterator[None]:
    """While it lasts, the transformers models in `module` attend in their eager form with rosetta's
    additive_mask; their attention implementation and transformers' eager mask builder are put back after."""
    models = [m for m in hugging_face_models(module) if getattr(m, "config", None) is not None]
    if not models:
        yield
        return
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    from rosetta.imports import entries_restored

    builders = ALL_MASK_ATTENTION_FUNCTIONS._global_mapping  # transformers' registry of mask builders, by name
    transformers_eager = builders["eager"]
    before = [(model, model.config._attn_implementation) for model in models]
    with entries_restored(builders, ["eager"]):
        builders["eager"] = lambda *args, **kwargs: additive_mask(transformers_eager, *args, **kwargs)
        try:
            for model, _ in before:
                model.set_attn_implementation("eager")
            yield
        finally:
            for model, implementation in reversed(before):
                model.set_attn_implementation(implementation)


class _BatchIndexRead(Exception):
    """A mask function read the batch (or head) index: its mask differs across the batch."""


class _UnreadableIndex:
    """The batch and head index handed to a mask function: any use of it raises _BatchIndexRead."""

    def __getattr__(self, name):
        raise _BatchIndexRead(name)

    def __index__(self):
        raise _BatchIndexRead("index")

    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __add__ = __radd__ = __sub__ = __rsub__ = \
        lambda self, *args: (_ for _ in ()).throw(_BatchIndexRead("arithmetic"))
    __hash__ = object.__hash__


def additive_mask(transformers_eager, batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
                  attention_mask=None, dtype=None, allow_is_bidirectional_skip=False, use_vmap=False, **kwargs):
    """eager_mask's (batch, 1, q_length, kv_length) float mask, from constants and the padding mask only."""
    import torch

    arguments = dict(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                     kv_offset=kv_offset, attention_mask=attention_mask,
                     allow_is_bidirectional_skip=allow_is_bidirectional_skip, use_vmap=use_vmap, **kwargs,
                     **({"mask_function": mask_function} if mask_function is not None else {}),
                     **({"dtype": dtype} if dtype is not None else {}))
    if mask_function is None or use_vmap or kwargs.get("local_size") is not None:
        return transformers_eager(**arguments)
    queries = torch.arange(int(q_length)) + int(q_offset)  # Python ints: constants in the traced graph
    keys = torch.arange(int(kv_length)) + int(kv_offset)
    try:
        allowed = mask_function(_UnreadableIndex(), _UnreadableIndex(), queries[:, None], keys[None, :])
    except _BatchIndexRead:
        return transformers_eager(**arguments)
    allowed = torch.as_tensor(allowed).expand(len(queries), len(keys)).to(dtype or torch.float32)
    if attention_mask is None:
        if allow_is_bidirectional_skip and bool(allowed.all()):
            return None
        attended = allowed[None, None]
    else:
        from transformers.masking_utils import prepare_padding_mask

        padding = prepare_padding_mask(attention_mask, int(kv_length), int(kv_offset))
        padding = padding[:, None, None, int(kv_offset):int(kv_offset) + int(kv_length)].to(allowed.dtype)
        # (batch, 1, 1, keys), broadcast over the queries by the attention's Add, as transformers 4's mask was
        attended = padding if bool(allowed.all()) else allowed[None, None] * padding
    return (1.0 - attended) * torch.finfo(attended.dtype).min
