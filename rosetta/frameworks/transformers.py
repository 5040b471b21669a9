"""Hugging Face transformers models, as rosetta exports them to ONNX.

transformers 5 builds every attention mask by evaluating a mask function (causal, bidirectional, sliding
window) on index grids, with the padding mask read by advanced indexing at [batch index, key index], and with
scaled_dot_product_attention by default. torch.onnx writes that as Range over the run-time batch size,
GatherElements, Expand, Equal, And, GreaterOrEqual, and (for SDPA's fully masked rows) IsNaN and Where: ops
no target but ONNX Runtime converts, in a BERT as in a GPT-2. transformers 4 wrote the same mask as
(1 - padding) * min, which every target converts.

`plain_attention_masks` exports such a model in plain ops, and computing what it computes: while torch.onnx
traces it, transformers' mask builders are rosetta's (`boolean_mask` for SDPA, `additive_mask` for eager
attention): the model's mask function evaluated on the constant query and key positions (their lengths are
static at export), times the padding mask's columns; and torch's scaled_dot_product_attention is
`plain_scaled_dot_product_attention`: MatMul, the mask added, Softmax, and the rows a boolean mask masks
entirely set to zero as torch's own safe softmax does (an eager-attention export would give such rows, a
left-padded GPT-2's first positions, a uniform average instead, and FAIL). The exported graph is verified
against the model as the user built it (SDPA, transformers' masks). A mask function that reads the batch
index (packed sequences, chunked attention with left padding) or a vmap'ed one is left to transformers' own
builder."""

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
    """While it lasts, the transformers models in `module` build their masks with rosetta's `boolean_mask` and
    torch's scaled_dot_product_attention is `plain_scaled_dot_product_attention`; both are put back after."""
    models = [m for m in hugging_face_models(module) if getattr(m, "config", None) is not None]
    if not models:
        yield
        return
    import torch
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    from rosetta.imports import entries_restored

    builders = ALL_MASK_ATTENTION_FUNCTIONS._global_mapping  # transformers' registry of mask builders, by name
    originals = {name: builders[name] for name in ("sdpa", "eager")}
    functional = vars(torch.nn.functional)
    with entries_restored(builders, list(originals)), entries_restored(functional, ["scaled_dot_product_attention"]):
        builders["sdpa"] = lambda *args, **kwargs: boolean_mask(originals["sdpa"], *args, **kwargs)
        builders["eager"] = lambda *args, **kwargs: additive_mask(originals["eager"], *args, **kwargs)
        functional["scaled_dot_product_attention"] = plain_scaled_dot_product_attention
        yield


@contextlib.contextmanager
def batched_experts(module) -> Iterator[list]:
    """While it lasts, the mixture-of-experts models in `module` run their experts as transformers'
    "batched_mm" (each token's chosen experts' weights gathered, one batched MatMul): the same function as
    the default "grouped_mm", whose offsets come from torch.histc and torch._grouped_mm (neither exports to
    ONNX), or "eager" (a Python loop over the experts the tokens chose, fixed at trace time). Yields the
    models it set; each is put back after."""
    models = [m for m in hugging_face_models(module) if getattr(m, "config", None) is not None
              and getattr(m, "_can_set_experts_implementation", lambda: False)()
              and getattr(m.config, "_experts_implementation", None) not in (None, "batched_mm")]
    outermost, covered = [], set()
    for model in models:  # outermost first: setting a model sets its submodels
        if id(model) not in covered:
            outermost.append(model)
            covered.update(id(m) for m in model.modules())
    models = outermost
    originals = [m.get_experts_implementation() for m in models]
    try:
        for model in models:
            model.set_experts_implementation("batched_mm")
        yield models
    finally:
        for model, original in zip(models, originals):
            model.set_experts_implementation(original)


def plain_scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                       scale=None, enable_gqa=False):
    """torch's scaled_dot_product_attention (inference) in the ops torch.onnx writes plainly: a boolean mask
    as (1 - mask) * min added to the scores, and the rows it masks entirely set to zero after the softmax, as
    torch's own does (its safe softmax), by the row's largest mask value; a float mask added."""
    import math

    import torch

    if enable_gqa and key.shape[-3] != query.shape[-3]:
        repeats = query.shape[-3] // key.shape[-3]
        key, value = key.repeat_interleave(repeats, -3), value.repeat_interleave(repeats, -3)
    scores = query @ key.transpose(-2, -1) * (scale if scale is not None else 1.0 / math.sqrt(query.shape[-1]))
    kept = None
    if is_causal:
        attn_mask = torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attended = attn_mask.to(scores.dtype)
        kept = attended.amax(-1, keepdim=True)
        scores = scores + (1.0 - attended) * torch.finfo(scores.dtype).min
    elif attn_mask is not None:
        scores = scores + attn_mask
    weights = scores.softmax(-1)
    if kept is not None:
        weights = weights * kept
    return weights @ value


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


def additive_mask(transformers_eager, batch_size, q_length, kv_length, q_offset=0, kv_offset=0, **options):
    """eager_mask's (batch, 1, q_length, kv_length) float mask (0 attended, the dtype's minimum elsewhere), from
    constants and the padding mask only. `options`: the rest of eager_mask's keywords (mask_function,
    attention_mask, dtype, allow_is_bidirectional_skip, use_vmap, ...), passed on as given."""
    import torch

    arguments = dict(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                     kv_offset=kv_offset, **{k: v for k, v in options.items()
                                             if v is not None or k not in ("mask_function", "dtype")})
    rest = {k: v for k, v in options.items() if k not in _MASK_KEYWORDS}
    attention_mask = options.get("attention_mask")
    attended = _attended(options.get("mask_function"), q_length, kv_length, q_offset, kv_offset, attention_mask,
                         options.get("use_vmap", False), rest, options.get("dtype"))
    if attended is None:
        return transformers_eager(**arguments)
    if attention_mask is None and options.get("allow_is_bidirectional_skip", False) and bool(attended.all()):
        return None
    return (1.0 - attended) * torch.finfo(attended.dtype).min


# the keywords of transformers' mask functions that rosetta's read; the others go to _attended as `kwargs`
_MASK_KEYWORDS = ("mask_function", "attention_mask", "dtype", "allow_is_causal_skip", "allow_is_bidirectional_skip",
                  "use_vmap")


def _attended(mask_function, q_length, kv_length, q_offset, kv_offset, attention_mask, use_vmap, kwargs, dtype=None):
    """1.0 where a query attends a key, else 0.0: the mask function on the constant positions, times the
    padding mask's columns; (1, 1, q, kv), or (batch, 1, 1, kv) where only padding masks (broadcast over the
    queries by the attention's Add, as transformers 4's mask was); None where rosetta leaves it to transformers."""
    import torch

    if mask_function is None or use_vmap or kwargs.get("local_size") is not None:
        return None
    queries = torch.arange(int(q_length)) + int(q_offset)  # Python ints: constants in the traced graph
    keys = torch.arange(int(kv_length)) + int(kv_offset)
    try:
        allowed = mask_function(_UnreadableIndex(), _UnreadableIndex(), queries[:, None], keys[None, :])
    except Exception:  # noqa: BLE001 - it read the batch or head index (torch refuses it as an index first)
        return None
    allowed = torch.as_tensor(allowed).expand(len(queries), len(keys)).to(dtype or torch.float32)
    if attention_mask is None:
        return allowed[None, None]
    from transformers.masking_utils import prepare_padding_mask

    padding = prepare_padding_mask(attention_mask, int(kv_length), int(kv_offset))
    padding = padding[:, None, None, int(kv_offset):int(kv_offset) + int(kv_length)].to(allowed.dtype)
    return padding if bool(allowed.all()) else allowed[None, None] * padding


def boolean_mask(transformers_sdpa, batch_size, q_length, kv_length, q_offset=0, kv_offset=0, **options):
    """sdpa_mask's (batch, 1, q_length, kv_length) boolean mask (True: attended), from constants and the padding
    mask only; None where transformers' would skip it (attending everything, no padding). `options`: the rest of
    sdpa_mask's keywords (mask_function, attention_mask, allow_is_causal_skip (default True),
    allow_is_bidirectional_skip, use_vmap, ...), passed on as given."""
    options = {"allow_is_causal_skip": True, "allow_is_bidirectional_skip": False, "use_vmap": False, **options}
    arguments = dict(batch_size=batch_size, q_length=q_length, kv_length=kv_length, q_offset=q_offset,
                     kv_offset=kv_offset, **{k: v for k, v in options.items()
                                             if v is not None or k != "mask_function"})
    rest = {k: v for k, v in options.items() if k not in _MASK_KEYWORDS}
    attention_mask = options.get("attention_mask")
    attended = _attended(options.get("mask_function"), q_length, kv_length, q_offset, kv_offset, attention_mask,
                         options["use_vmap"], rest)
    if attended is None:
        return transformers_sdpa(**arguments)
    if attention_mask is None and (options["allow_is_bidirectional_skip"] or options["allow_is_causal_skip"]) \
            and bool(attended.all()):
        return None
    return attended.bool()
