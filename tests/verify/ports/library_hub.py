"""Ports written by a model library: keras-hub's backbones converted by keras-hub itself (`from_preset` on a local
Hugging Face folder: keras_hub/src/utils/transformers/convert_*.py) from tiny Hugging Face checkpoints built here
with seeded weights (nothing downloaded). Writes into FOLDER:

- bert-tiny/, gpt2-tiny/, llama-tiny/, vit-tiny/: the Hugging Face checkpoints (config.json, model.safetensors),
  built by transformers from torch.manual_seed(0) and its own initialisation (Llama and ViT saved with their heads,
  LlamaForCausalLM and ViTForImageClassification, so that their weights carry the prefixes keras-hub reads);
- hub_nets.py: the PyTorch references, read as `hub_nets.py:NAME` (with --trust-code), each loaded from its
  checkpoint beside the file: `bert` (forward(input_ids, token_type_ids, attention_mask) -> last_hidden_state),
  `gpt2` and `llama` (forward(input_ids, attention_mask) -> last_hidden_state), `vit` (forward(pixel_values) ->
  last_hidden_state); their module paths are transformers' own ("encoder.layer.1.attention.output.LayerNorm",
  "h.0.attn.c_attn", "layers.0.self_attn.q_proj", "vit.layers.0.layernorm_before");
- bert-port.keras, gpt2-port.keras, llama-port.keras: the backbones as keras-hub converts and saves them (dict
  inputs token_ids, segment_ids (BERT), padding_mask; dict outputs);
- the same ports with a bug seeded inside a block: *-epsilon.keras (block 1's layer-norm epsilon 1e-3 in place of
  the checkpoint's; saved as a functional model of the backbone's layers, since a keras-hub backbone rebuilds its
  blocks from its own arguments on load; Llama's in every block, see ports()) and *-query.keras (block 0's query
  kernel transposed, set after load);
- vit-port.keras as keras-hub converts it (LayerNorm epsilon 1e-6: its converter does not read the checkpoint's
  1e-12), vit-port-fixed.keras given the checkpoint's epsilon, vit-port-swapped.keras that with block 1's query
  and key projections swapped.

keras-hub's BERT applies the tanh GELU whatever the checkpoint says (bert_backbone.py: gelu_approximate), so
bert-tiny says `hidden_act: gelu_pytorch_tanh`, the function keras-hub computes (with transformers' default, the
erf GELU, and its initialisation's small weights the two GELUs differ below the float32 noise floor here: such a
port PASSes, so it is no fixture).

    python library_hub.py FOLDER     (runs the PyTorch half and the Keras half each in a process of its own:
                                      TensorFlow and PyTorch in one process is slow to tear down)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SEQUENCE = 16  # max positions: the ports' free sequence axis is sized from the reference's inputs (Nx16)
BERT = dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=SEQUENCE)
GPT2 = dict(vocab_size=64, n_embd=16, n_layer=2, n_head=2, n_positions=SEQUENCE, bos_token_id=0, eos_token_id=0)
# Llama: rotary embeddings, RMSNorm, SwiGLU, grouped-query attention (4 query heads sharing 2 key/value heads)
LLAMA = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=SEQUENCE, tie_word_embeddings=False)
# ViT: 32x32 images in 8x8 patches (16 patches and the class token); LayerNorm epsilon 1e-12 (transformers' default)
VIT = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
           intermediate_size=32, qkv_bias=True)
EPSILON = 1e-3  # Keras's default LayerNormalization epsilon; the checkpoints say 1e-12 (BERT) and 1e-5 (GPT-2)
VIT_EPSILON = 1e-12  # what the ViT checkpoint says; keras-hub's ViT converter keeps ViTBackbone's own 1e-6

FACTORIES = '''"""The PyTorch references of keras-hub's ports (written by library_hub.py): transformers' models loaded
from the tiny checkpoints beside this file, returning the last hidden state."""

from pathlib import Path

from rosetta.frameworks.torchvision import make_importable

make_importable()  # transformers imports torchvision
import transformers  # noqa: E402

HERE = Path(__file__).resolve().parent


class Bert(transformers.BertModel):
    def forward(self, input_ids, token_type_ids, attention_mask):
        return super().forward(input_ids=input_ids, token_type_ids=token_type_ids,
                               attention_mask=attention_mask).last_hidden_state


class GPT2(transformers.GPT2Model):
    def forward(self, input_ids, attention_mask):
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state


def bert():
    return Bert.from_pretrained(HERE / "bert-tiny", add_pooling_layer=False).eval()


def gpt2():
    return GPT2.from_pretrained(HERE / "gpt2-tiny").eval()


class Llama(transformers.LlamaModel):
    def forward(self, input_ids, attention_mask):
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state


class ViT(transformers.ViTForImageClassification):
    """The checkpoint's backbone (its module paths "vit.layers.0.attention.q_proj"): transformers 5's ViTModel
    loaded from a checkpoint saved with its head leaves the renamed attention and MLP weights at their
    initialisation, the classifier loads them all."""

    def forward(self, pixel_values):
        return self.vit(pixel_values=pixel_values).last_hidden_state


def llama():
    return Llama.from_pretrained(HERE / "llama-tiny").eval()


def vit():
    return ViT.from_pretrained(HERE / "vit-tiny").eval()
'''


def checkpoints(folder: Path) -> None:
    """The Hugging Face checkpoints, seeded, and the factories that load them."""
    import torch

    from rosetta.frameworks.torchvision import make_importable

    make_importable()
    import transformers

    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(**BERT, hidden_act="gelu_pytorch_tanh")).save_pretrained(
        folder / "bert-tiny", safe_serialization=True)
    torch.manual_seed(0)
    transformers.GPT2Model(transformers.GPT2Config(**GPT2)).save_pretrained(folder / "gpt2-tiny",
                                                                            safe_serialization=True)
    # saved with their heads, so that the weights carry the prefixes keras-hub's converters name ("model.",
    # "vit."); the references load the bare models from them
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(transformers.LlamaConfig(**LLAMA)).save_pretrained(folder / "llama-tiny",
                                                                                    safe_serialization=True)
    torch.manual_seed(0)
    transformers.ViTForImageClassification(transformers.ViTConfig(**VIT, num_labels=2)).save_pretrained(
        folder / "vit-tiny", safe_serialization=True)
    (folder / "hub_nets.py").write_text(FACTORIES)


def transposed(kernel):
    """A query kernel (hidden, heads, head_dim) with its (hidden, hidden) matrix transposed."""
    hidden = kernel.shape[0]
    return kernel.reshape(hidden, hidden).T.reshape(kernel.shape)


def ports(folder: Path) -> None:
    """keras-hub's conversions of the checkpoints, and each with a bug inside a block."""
    import keras
    import keras_hub

    for family, cls in (("bert", keras_hub.models.BertBackbone), ("gpt2", keras_hub.models.GPT2Backbone)):
        checkpoint = str(folder / f"{family}-tiny")
        cls.from_preset(checkpoint).save(folder / f"{family}-port.keras")

        backbone = cls.from_preset(checkpoint)  # block 1's layer-norm epsilon: a setting of the block
        block = backbone.get_layer("transformer_layer_1")
        block.layer_norm_epsilon = EPSILON  # what the block's config says, and so what it is rebuilt with
        keras.Model(backbone.input, backbone.output, name=f"{family}_epsilon").save(
            folder / f"{family}-port-epsilon.keras")

        backbone = cls.from_preset(checkpoint)  # block 0's query kernel transposed
        query = backbone.get_layer("transformer_layer_0")._self_attention_layer.query_dense
        query.kernel.assign(transposed(keras.ops.convert_to_numpy(query.kernel)))
        backbone.save(folder / f"{family}-port-query.keras")

    llama = str(folder / "llama-tiny")
    keras_hub.models.Llama3Backbone.from_preset(llama).save(folder / "llama-port.keras")
    # the RMSNorm epsilon 1e-3 in every block (the checkpoint's rms_norm_eps 1e-6): one block's alone cannot be
    # saved, since LlamaTransformerDecoder.get_config reads an attribute it never sets (rope_scaling_factor), so
    # a functional model of the backbone's layers does not save; the first block is where it must be located
    keras_hub.models.Llama3Backbone.from_preset(llama, layer_norm_epsilon=EPSILON).save(
        folder / "llama-port-epsilon.keras")
    backbone = keras_hub.models.Llama3Backbone.from_preset(llama)  # block 0's query kernel transposed
    query = backbone.get_layer("transformer_layer_0")._self_attention_layer._query_dense
    query.kernel.assign(transposed(keras.ops.convert_to_numpy(query.kernel)))
    backbone.save(folder / "llama-port-query.keras")

    vit = str(folder / "vit-tiny")
    keras_hub.models.ViTBackbone.from_preset(vit).save(folder / "vit-port.keras")  # as converted: epsilon 1e-6
    keras_hub.models.ViTBackbone.from_preset(vit, layer_norm_epsilon=VIT_EPSILON).save(
        folder / "vit-port-fixed.keras")
    backbone = keras_hub.models.ViTBackbone.from_preset(vit, layer_norm_epsilon=VIT_EPSILON)
    attention = backbone.get_layer("vit_encoder").encoder_layers[1].mha  # block 1's query and key swapped
    query, key = attention.query_dense, attention.key_dense
    swapped = [keras.ops.convert_to_numpy(v) for v in (key.kernel, key.bias, query.kernel, query.bias)]
    for variable, value in zip((query.kernel, query.bias, key.kernel, key.bias), swapped):
        variable.assign(value)
    backbone.save(folder / "vit-port-swapped.keras")


if __name__ == "__main__":
    FOLDER = Path(sys.argv[1])
    if len(sys.argv) == 2:
        for half in ("checkpoints", "ports"):
            subprocess.run([sys.executable, __file__, str(FOLDER), half], check=True)
    else:
        {"checkpoints": checkpoints, "ports": ports}[sys.argv[2]](FOLDER)
