"""Ports written by a model library: keras-hub's backbones converted by keras-hub itself (`from_preset` on a local
Hugging Face folder: keras_hub/src/utils/transformers/convert_*.py) from tiny Hugging Face checkpoints built here
with seeded weights (nothing downloaded). Writes into FOLDER:

- bert-tiny/, gpt2-tiny/: the Hugging Face checkpoints (config.json, model.safetensors), built by transformers
  from torch.manual_seed(0) and its own initialisation;
- hub_nets.py: the PyTorch references, read as `hub_nets.py:NAME` (with --trust-code), each loaded from its
  checkpoint beside the file: `bert` (forward(input_ids, token_type_ids, attention_mask) -> last_hidden_state) and
  `gpt2` (forward(input_ids, attention_mask) -> last_hidden_state); their module paths are transformers' own
  ("encoder.layer.1.attention.output.LayerNorm", "h.0.attn.c_attn");
- bert-port.keras, gpt2-port.keras: the backbones as keras-hub converts and saves them (dict inputs token_ids,
  segment_ids (BERT), padding_mask; dict outputs);
- the same ports with a bug seeded inside a block: *-epsilon.keras (block 1's layer-norm epsilon 1e-3 in place of
  the checkpoint's; saved as a functional model of the backbone's layers, since a keras-hub backbone rebuilds its
  blocks from its own arguments on load) and *-query.keras (block 0's query kernel transposed, set after load).

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
EPSILON = 1e-3  # Keras's default LayerNormalization epsilon; the checkpoints say 1e-12 (BERT) and 1e-5 (GPT-2)

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


if __name__ == "__main__":
    FOLDER = Path(sys.argv[1])
    if len(sys.argv) == 2:
        for half in ("checkpoints", "ports"):
            subprocess.run([sys.executable, __file__, str(FOLDER), half], check=True)
    else:
        {"checkpoints": checkpoints, "ports": ports}[sys.argv[2]](FOLDER)
