"""The porting-bug diagnoses (rosetta.verify.diagnoses), each on Layers built by hand with its bug, and on the
correct pair (where it must say nothing): end pairs as the one-to-one locate gives them, and segments (reference
modules against port layers between two matched tensors) as the unaligned locate gives them."""

from __future__ import annotations

import numpy as np

from rosetta.frameworks.layers import Layer, gate_blocks
from rosetta.verify.diagnoses import diagnose

RNG = np.random.default_rng(0)
NOWHERE = np.zeros(1)  # the diagnoses read parameters and settings, never outputs


def _context(references, ports) -> dict:
    return {"reference": references, "port": ports, "pairs": [], "at": (len(references) - 1, len(ports) - 1),
            "segment": (references, ports)}


def _diagnose(references, ports) -> str:
    return diagnose(references[-1], ports[-1], _context(references, ports))


def test_the_diagnoses_each_recognise_their_class_and_nothing_else():
    """Each diagnosis on a pair of layers built with its bug, and on a correct pair (it must say nothing)."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((8, 3, 3, 5))

    def conv(w, pads=((1, 1), (1, 1))):
        return Layer("conv", "conv", "Conv", np.zeros((1, 8, 4, 4)), params={"weight": w},
                     config={"pads": [list(p) for p in pads], "strides": [2, 2]})

    context = {"reference": [], "port": [], "pairs": [], "at": (0, 0)}
    assert diagnose(conv(weight), conv(weight), context) == ""
    assert "transposed in H and W" in diagnose(conv(weight[:, :, :3, :3]), conv(np.swapaxes(weight[:, :, :3, :3], 2, 3)),
                                               context)
    assert "padding" in diagnose(conv(weight), conv(weight, ((0, 1), (0, 1))), context)
    bn = lambda eps: Layer("bn", "batchnorm", "BN", np.zeros(1), config={"epsilon": eps})  # noqa: E731
    assert diagnose(bn(1e-5), bn(1e-5), context) == "" and "epsilon" in diagnose(bn(1e-5), bn(1e-3), context)
    w_ih, w_hh = rng.standard_normal((36, 8)), rng.standard_normal((36, 12))
    gru = lambda a, b, after=True: Layer("g", "gru", "GRU", np.zeros(1), params={"weight_ih_l0": a, "weight_hh_l0": b},  # noqa: E731
                                         config={"reset_after": after})
    assert diagnose(gru(w_ih, w_hh), gru(w_ih, w_hh), context) == ""
    assert "gates r and z" in diagnose(gru(w_ih, w_hh), gru(gate_blocks(w_ih, (1, 0, 2)), gate_blocks(w_hh, (1, 0, 2))),
                                       context)
    assert "reset_after" in diagnose(gru(w_ih, w_hh), gru(w_ih, w_hh, False), context)
    dense = lambda w: Layer("d", "dense", "Dense", np.zeros(1), params={"weight": w})  # noqa: E731
    found = diagnose(dense(w_ih), dense(w_ih * 1.5), context)
    assert found.startswith("no known porting bug recognised; weight differs by up to")


# -- stride placement -------------------------------------------------------------------------------------------

def _conv(name, out, into, kernel, stride, weight=None):
    weight = RNG.standard_normal((out, into, kernel, kernel)) if weight is None else weight
    return Layer(name, "conv", "Conv2d", NOWHERE, params={"weight": weight},
                 config={"strides": [stride, stride], "pads": [(kernel // 2, kernel // 2)] * 2})


def _bottleneck(strided: str, weights=None):
    """conv1 (1x1), bn, relu, conv2 (3x3) of a bottleneck, the stride 2 on `strided`."""
    weights = weights or {"conv1": RNG.standard_normal((4, 8, 1, 1)), "conv2": RNG.standard_normal((4, 4, 3, 3))}
    return [_conv("conv1", 4, 8, 1, 2 if strided == "conv1" else 1, weights["conv1"]),
            Layer("relu1", "activation", "ReLU", NOWHERE, config={"activation": "relu"}),
            _conv("conv2", 4, 4, 3, 2 if strided == "conv2" else 1, weights["conv2"])], weights


def test_a_stride_on_another_conv_is_named_from_the_settings_alone():
    """ResNet v1 (stride on the 1x1) against v1.5 (on the 3x3): the outputs inside differ in size, so only the
    convs' shapes and strides can tell; the same block on both sides says nothing of strides."""
    reference, weights = _bottleneck("conv2")
    v1, _ = _bottleneck("conv1", weights)
    found = _diagnose(reference, v1)
    assert found.startswith("stride placement: stride 2 on the 1x1 conv conv1 here (ResNet v1), stride 2 on the 3x3 "
                            "conv conv2 in the reference (v1.5)"), found
    assert "stride placement" not in _diagnose(reference, _bottleneck("conv2", weights)[0])
    # another overall stride is not a placement
    assert "stride placement" not in _diagnose(reference, [_conv("conv1", 4, 8, 1, 2, weights["conv1"]),
                                                           _conv("conv2", 4, 4, 3, 2, weights["conv2"])])


# -- activations ----------------------------------------------------------------------------------------------

def _activation(name, activation):
    return Layer(name, "activation", "Activation", NOWHERE, config={"activation": activation})


def test_an_activation_anywhere_in_the_segment_and_gelus_two_forms():
    """conv+bn+ReLU modules against a Conv2D with its activation fused: the multiset along each side."""
    weight = RNG.standard_normal((4, 3, 3, 3))
    reference = [_conv("conv2", 4, 3, 3, 1, weight), Layer("bn2", "batchnorm", "BatchNorm2d", NOWHERE),
                 _activation("relu2", "relu")]
    fused = lambda activation: [Layer("conv2", "conv", "Conv2D", NOWHERE, params={"weight": weight},  # noqa: E731
                                      config={"strides": [1, 1], "activation": activation})]
    assert _diagnose(reference, fused("elu")) == "activation: elu here, relu in the reference"
    assert not _diagnose(reference, fused("relu")).startswith("activation")
    # the other engineer's split: the fused activation as a layer of its own ("conv2/activation")
    split = [fused(None)[0], _activation("conv2/activation", "relu")]
    assert not _diagnose(reference, split).startswith("activation")
    gelu = [_activation("fc1", "gelu")]
    found = _diagnose([_activation("act", "gelu")], [_activation("act", "gelu_tanh")])
    assert found == ("activation: gelu_tanh (GELU's tanh approximation) here, gelu (exact, erf) in the reference"), found
    assert _diagnose(gelu, [_activation("fc1", "gelu")]) == ""
    # PyTorch's and Keras's names of one function; a side with no activation module (torch.tanh in forward)
    assert not _diagnose([_activation("a", "hardswish")], [_activation("a", "hard_swish")]).startswith("activation")
    assert _diagnose([_conv("conv", 4, 3, 3, 1, weight)], fused("tanh")) == ""


def test_the_describe_functions_tell_gelus_two_forms():
    """nn.GELU(approximate="tanh") and Keras's gelu(approximate=True) say "gelu_tanh", the erf forms "gelu"."""
    from torch import nn

    from rosetta.frameworks.torch_layers import describe

    assert describe(nn.GELU(approximate="tanh"))[2] == {"activation": "gelu_tanh"}
    assert describe(nn.GELU())[2] == {"activation": "gelu"}
    assert describe(nn.GroupNorm(2, 4, eps=1e-3))[2] == {"eps": 1e-3}


# -- epsilon ----------------------------------------------------------------------------------------------------

def _layernorm(name, epsilon):
    return Layer(name, "layernorm", "LayerNorm", NOWHERE, config={"epsilon": epsilon})


def test_an_epsilon_wherever_the_port_holds_it():
    """A transformer block's modules against one Keras layer whose settings hold the epsilon, nested or not."""
    reference = [_layernorm("blocks.1.norm1", 1e-5), Layer("blocks.1.fc1", "dense", "Linear", NOWHERE),
                 _layernorm("blocks.1.norm2", 1e-5)]
    block = lambda settings: [Layer("block_1", "other", "EncoderBlock", NOWHERE, config=settings)]  # noqa: E731
    found = _diagnose(reference, block({"hidden": 16, "epsilon": 1e-3}))
    assert found.startswith("epsilon 0.001 here, 1e-05 in the reference (block_1.epsilon here;"), found
    found = _diagnose(reference, block({"encoder": {"layer_norm_epsilon": 1e-6}}))
    assert found.startswith("epsilon 1e-06 here, 1e-05 in the reference (block_1.encoder.layer_norm_epsilon"), found
    assert "epsilon" not in _diagnose(reference, block({"norm_epsilon": 1e-5}))
    # the block traced with its sublayers: read through them, the block's own setting not counted twice
    sublayers = block({"epsilon": 1e-3}) + [_layernorm("block_1/norm1", 1e-3), _layernorm("block_1/norm2", 1e-3)]
    assert "(block_1/norm1, block_1/norm2 here" in _diagnose(reference, sublayers)


def _folded_setup(epsilon=1e-5):
    """conv1 (with bias) then bn1, and the fold a port holds in one conv."""
    from rosetta.verify.diagnoses.folded_batchnorm import folded

    conv = _conv("conv1", 6, 3, 3, 1)
    conv.params["bias"] = RNG.standard_normal(6)
    bn = Layer("bn1", "batchnorm", "BatchNorm2d", NOWHERE,
               params={"scale": RNG.uniform(0.5, 2, 6), "shift": RNG.standard_normal(6),
                       "mean": RNG.standard_normal(6), "var": RNG.uniform(0.01, 0.1, 6)},
               config={"epsilon": 1e-5})
    relu = _activation("relu1", "relu")

    def port(weight, bias):
        return [Layer("conv1", "conv", "Conv2D", NOWHERE, params={"weight": weight.astype(np.float32),
                                                                  "bias": bias.astype(np.float32)},
                      config={"strides": [1, 1]}), _activation("conv1/activation", "relu")]
    return [conv, bn, relu], folded, port


def test_a_batchnorm_folded_with_another_epsilon_or_part():
    reference, folded, port = _folded_setup()
    conv, bn = reference[:2]
    assert _diagnose(reference, port(*folded(conv, bn, 1e-5))) == ""
    assert _diagnose(reference, port(*folded(conv, bn, 1e-3))) == \
        "BatchNorm bn1 folded into conv1 with epsilon 0.001 here, the reference's is 1e-05"
    # an epsilon no one uses, solved from the weights
    assert "with epsilon 0.0042 here" in _diagnose(reference, port(*folded(conv, bn, 4.2e-3)))
    # the running mean left out of the bias: the weights agree, the bias names mean or shift with figures
    weight, bias = folded(conv, bn, 1e-5)
    wrong_bias = bias + bn.params["mean"] * bn.params["scale"] / np.sqrt(bn.params["var"] + 1e-5)
    found = _diagnose(reference, port(weight, wrong_bias))
    assert found.startswith("BatchNorm bn1 folded into conv1: no epsilon reproduces the port's weights; its bias "
                            "implies a shift differing from bn1's by up to"), found
    assert "running mean differing by up to" in found and "weights imply" not in found
    # the scale left out: the weights' factor per channel names scale or variance
    found = _diagnose(reference, port(*folded(conv, Layer("bn1", "batchnorm", "BN", NOWHERE, params={
        **bn.params, "scale": np.ones(6)}, config=bn.config), 1e-5)))
    assert "its weights imply a scale differing from bn1's by up to" in found, found
    assert "not folded" in _diagnose(reference, port(conv.params["weight"], conv.params["bias"]))


# -- attention ----------------------------------------------------------------------------------------------------

HIDDEN, HEADS = 16, 2


def _linear(name, weight, bias):
    return Layer(name, "dense", "Linear", NOWHERE, params={"weight": weight, "bias": bias})


def _torch_block():
    """PyTorch's innermost modules of an attention: query, key, value and output Linear (out, in)."""
    return [_linear(f"blocks.0.{name}", RNG.standard_normal((HIDDEN, HIDDEN)), RNG.standard_normal(HIDDEN))
            for name in ("query", "key", "value", "out")]


def _keras_block(reference, change=None):
    """One Keras layer holding a MultiHeadAttention, its kernels by variable path in Keras's layouts; `change`
    (name -> PyTorch-form weight) puts a bug in before the layout."""
    weights = {layer.name.split(".")[-1]: layer.params["weight"] for layer in reference}
    biases = {layer.name.split(".")[-1]: layer.params["bias"] for layer in reference}
    weights.update(change or {})
    size = HIDDEN // HEADS
    params = {}
    for name, keras_name in (("query", "query"), ("key", "key"), ("value", "value")):
        params[f"attention/{keras_name}/kernel"] = weights[name].T.reshape(HIDDEN, HEADS, size)
        params[f"attention/{keras_name}/bias"] = biases[name].reshape(HEADS, size)
    params["attention/attention_output/kernel"] = weights["out"].T.reshape(HEADS, size, HIDDEN)
    params["attention/attention_output/bias"] = biases["out"]
    return [Layer("block_0", "other", "EncoderBlock", NOWHERE, params=params, config={"heads": HEADS})]


def test_attention_parameter_bugs_are_named_from_the_weights():
    reference = _torch_block()
    q, k = reference[0].params["weight"], reference[1].params["weight"]
    assert _diagnose(reference, _keras_block(reference)) == ""
    found = _diagnose(reference, _keras_block(reference, {"query": k, "key": q}))
    assert found.startswith("query and key projections swapped: block_0/attention/query/kernel here holds the "
                            "reference's blocks.0.key.weight"), found
    found = _diagnose(reference, _keras_block(reference, {"query": q.T}))
    assert found.startswith("block_0/attention/query/kernel transposed: it holds the reference's "
                            "blocks.0.query.weight transposed"), found
    size = HIDDEN // HEADS
    head_minor = q.reshape(HEADS, size, HIDDEN).swapaxes(0, 1).reshape(HIDDEN, HIDDEN)
    found = _diagnose(reference, _keras_block(reference, {"query": head_minor}))
    assert found.startswith("heads split in another order: block_0/attention/query/kernel holds the reference's "
                            f"blocks.0.query.weight with its output rows head-minor here ({size} per head, {HEADS} "
                            "heads interleaved)"), found
    found = _diagnose(reference, _keras_block(reference, {"query": q / np.sqrt(size)}))
    assert found.startswith(f"attention scale: block_0/attention/query/kernel is the reference's blocks.0.query.weight "
                            f"x 1/sqrt({size})"), found
    assert "is missing here" in _diagnose(reference, _keras_block(reference, {"query": q * np.sqrt(size)}))


def test_a_tensor_that_matches_none_is_named_with_the_nearest():
    """The fallback: which port tensor equals none of the reference's, and how far the nearest is."""
    reference = _torch_block()
    wrong = reference[2].params["weight"].copy()
    wrong[0, 0] += 0.5
    found = _diagnose(reference, _keras_block(reference, {"value": wrong}))
    assert found == ("no known porting bug recognised; block_0/attention/value/kernel matches no tensor of the "
                     "reference (nearest blocks.0.value.weight, differs by up to 0.5)"), found
    # a bias the port does not hold
    dense = _linear("fc", RNG.standard_normal((4, 6)), RNG.standard_normal(4))
    found = _diagnose([dense], [Layer("fc", "dense", "Dense", NOWHERE, params={"weight": dense.params["weight"]})])
    assert found.startswith("no known porting bug recognised; the reference's fc.bias matches no tensor"), found
    # a correct fold is held: nothing unmatched
    reference, folded, port = _folded_setup()
    assert _diagnose(reference, port(*folded(*reference[:2], 1e-5))) == ""


# -- attention without parameters: rotary pairing, the causal mask's diagonal ------------------------------------

def _angles(size: int, dim: int) -> np.ndarray:
    inverse = 10000.0 ** (-np.arange(0, dim, 2) / dim)
    return np.arange(size)[:, None] * inverse  # (positions, dim / 2)


def _rope(x: np.ndarray, interleaved: bool) -> np.ndarray:
    """Rotary embeddings on (batch, positions, heads, dim): Meta's pairs of neighbours or Hugging Face's
    rotate_half, written out as each codebase does."""
    angles = _angles(x.shape[1], x.shape[-1])[None, :, None, :]
    if interleaved:
        even, odd = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = even * np.cos(angles) - odd * np.sin(angles)
        out[..., 1::2] = even * np.sin(angles) + odd * np.cos(angles)
        return out
    cos, sin = np.cos(np.concatenate([angles] * 2, -1)), np.sin(np.concatenate([angles] * 2, -1))
    first, second = np.split(x, 2, axis=-1)
    return x * cos + np.concatenate([-second, first], -1) * sin


def _rotary_models(port_interleaved: bool, reference_rotates: bool = False, reference_interleaved: bool = False):
    """(reference layers, port layers): a Hugging Face Llama attention (its query Linear, its rotary_emb table of
    cos, computed once; or, `reference_rotates`, a module that rotates) against a keras-hub decoder block whose
    rotary layer rotates the query."""
    rng = np.random.default_rng(1)
    hidden, query = rng.standard_normal((2, 6, 16)), rng.standard_normal((2, 6, 2, 8))
    if reference_rotates:
        rotary = Layer("layers.0.self_attn.rope", "other", "RotaryEmbedding", _rope(query, reference_interleaved),
                       inputs=[query])
    else:
        angles = _angles(6, 8)
        table = np.cos(np.repeat(angles, 2, -1) if reference_interleaved else np.concatenate([angles] * 2, -1))
        rotary = Layer("rotary_emb", "other", "LlamaRotaryEmbedding", table[None], inputs=[hidden])
    references = [rotary, Layer("layers.0.self_attn.q_proj", "dense", "Linear", query.reshape(2, 6, 16),
                                inputs=[hidden])]
    ports = [Layer("transformer_layer_0", "block", "LlamaTransformerDecoder", hidden, inputs=[hidden]),
             Layer("transformer_layer_0/self_attention/query", "other", "EinsumDense", query, inputs=[hidden]),
             Layer("transformer_layer_0/self_attention/rotary_embedding", "other", "RotaryEmbedding",
                   _rope(query, port_interleaved), inputs=[query])]
    return references, ports


def _diagnose_segment(references, ports, segment) -> str:
    context = {"reference": references, "port": ports, "pairs": [], "at": (len(references) - 1, len(ports) - 1),
               "segment": segment}
    return diagnose(segment[0][-1], segment[1][-1], context)


def test_rotary_embeddings_interleaved_against_half_split_are_named():
    """Both directions, from a table of cos on one side or a rotating layer on both; a correct port not given it."""
    references, ports = _rotary_models(port_interleaved=True)
    found = _diagnose_segment(references, ports, ([references[1]], ports[1:]))
    assert found.startswith("rotary embeddings paired in another order: interleaved (dimension 2i turns with 2i + 1) "
                            "here (transformer_layer_0/self_attention/rotary_embedding), half-split"), found
    references, ports = _rotary_models(port_interleaved=False, reference_rotates=True, reference_interleaved=True)
    found = _diagnose_segment(references, ports, (references, ports[1:]))
    assert found.startswith("rotary embeddings paired in another order: half-split (dimension i turns with i + d/2: "
                            "rotate_half) here"), found
    assert "interleaved (dimension 2i turns with 2i + 1) in the reference (layers.0.self_attn.rope)" in found
    for interleaved, rotates in ((False, False), (False, True), (True, True)):
        references, ports = _rotary_models(interleaved, rotates, interleaved)
        assert "rotary" not in _diagnose_segment(references, ports, (references, ports[1:]))


def _probabilities(offset: int | None, padded_key: int | None = 4) -> np.ndarray:
    """Attention probabilities (batch, heads, 6, 6) of random scores, keys k > q + offset removed (None: no causal
    mask), and one key of the second sample removed as padding."""
    scores = np.random.default_rng(2).standard_normal((2, 2, 6, 6))
    q, k = np.indices((6, 6))
    removed = np.zeros((2, 2, 6, 6), bool)
    if offset is not None:
        removed |= (k > q + offset)[None, None]
    if padded_key is not None:
        removed[1, :, :, padded_key] = True
    scores = np.where(removed, -1e9, scores)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return (weights / weights.sum(-1, keepdims=True)).astype(np.float32)


def _attention(offset, reference_softmax: bool):
    hidden = np.zeros((2, 6, 16))
    references = [Layer("h.0.attn.c_attn", "dense", "Conv1D", hidden)]
    if reference_softmax:
        references.append(Layer("h.0.attn.softmax", "other", "Softmax", _probabilities(0)))
    ports = [Layer("transformer_layer_0/self_attention/query", "other", "EinsumDense", hidden),
             Layer("transformer_layer_0/self_attention/attention_softmax", "other", "Softmax",
                   _probabilities(offset))]
    return references, ports


def test_a_causal_mask_shifted_by_one_is_named_from_the_attention_probabilities():
    references, ports = _attention(1, reference_softmax=False)
    found = _diagnose_segment(references, ports, (references, ports))
    assert found.startswith("causal mask shifted by one: query q attends to keys up to q + 1 (it sees the next "
                            "token) here (transformer_layer_0/self_attention/attention_softmax)"), found
    references, ports = _attention(-1, reference_softmax=True)
    found = _diagnose_segment(references, ports, (references, ports))
    assert found.startswith("causal mask shifted by one: query q attends to keys up to q - 1 (its own key masked)"), found
    assert found.endswith("query q attends to keys up to q in the reference (h.0.attn.softmax)"), found
    for offset in (0, None):  # the causal diagonal, and a bidirectional encoder's: not given it
        references, ports = _attention(offset, reference_softmax=True)
        assert "causal" not in _diagnose_segment(references, ports, (references, ports))


def test_a_fused_query_key_value_projection_is_read_in_thirds():
    """GPT-2's c_attn (a Conv1D (in, 3 x hidden)) against a port's three projections: the transposed query named
    against the query third; the correct port, and a PyTorch in_proj (3 x hidden, in), given nothing."""
    reference = _torch_block()
    q, k, v = (layer.params["weight"] for layer in reference[:3])
    bias = np.concatenate([layer.params["bias"] for layer in reference[:3]])
    fused = [Layer("h.0.attn.c_attn", "other", "Conv1D", NOWHERE,
                   params={"weight": np.concatenate([q, k, v]).T, "bias": bias}), reference[3]]
    assert _diagnose(fused, _keras_block(reference)) == ""
    found = _diagnose(fused, _keras_block(reference, {"query": q.T}))
    assert found.startswith("block_0/attention/query/kernel transposed: it holds the reference's "
                            "h.0.attn.c_attn/weight (the query third of the fused projection) transposed"), found
    found = _diagnose(fused, _keras_block(reference, {"query": k, "key": q}))
    assert found.startswith("query and key projections swapped"), found
    in_proj = [Layer("attn", "other", "MultiheadAttention", NOWHERE,
                     params={"in_proj_weight": np.concatenate([q, k, v]), "in_proj_bias": bias}), reference[3]]
    assert _diagnose(in_proj, _keras_block(reference)) == ""
    assert "transposed" in _diagnose(in_proj, _keras_block(reference, {"query": q.T}))


def test_an_activation_a_keras_port_leaves_out_is_named_and_a_torch_port_says_nothing():
    """deconv -> relu2 -> head against a Keras port with no ReLU: Keras's own layers record every activation they
    apply, so the reference's relu2 has no counterpart; a PyTorch port (torch.relu in forward) proves nothing."""
    weight = RNG.standard_normal((2, 3, 3, 3))
    reference = [_activation("relu2", "relu"), _conv("head", 2, 3, 3, 1, weight)]
    keras_head = Layer("head", "conv", "Conv2D", NOWHERE, params={"weight": weight}, config={"strides": [1, 1]})
    assert "relu2 has no counterpart" in _diagnose(reference, [keras_head])
    torch_head = Layer("head", "conv", "Conv2d", NOWHERE, params={"weight": weight}, config={"strides": [1, 1]})
    assert not _diagnose(reference, [torch_head]).startswith("activation")


def _lstm_halves(swapped: bool):
    rng = np.random.default_rng(1)
    names = ("weight_ih_l0", "weight_hh_l0", "bias_l0")
    forward = {name: rng.standard_normal((8, 3)) for name in names}
    backward = {name: rng.standard_normal((8, 3)) for name in names}
    whole = Layer("rnn", "lstm", "LSTM", NOWHERE, params={**forward, **{n + "_reverse": v for n, v in backward.items()}},
                  config={"bidirectional": True})
    halves = [Layer("rnn/forward_lstm", "lstm", "LSTM", NOWHERE, params=backward if swapped else forward),
              Layer("rnn/backward_lstm", "lstm", "LSTM", NOWHERE, params=forward if swapped else backward),
              Layer("rnn", "other", "Bidirectional", NOWHERE)]
    return whole, halves


def test_bidirectional_halves_swapped_are_named_and_correct_halves_are_not_blamed():
    whole, halves = _lstm_halves(swapped=True)
    assert "bidirectional halves swapped" in _diagnose([whole], halves)
    whole, halves = _lstm_halves(swapped=False)
    found = _diagnose([whole], halves)
    assert "swapped" not in found and "differs" not in found, found  # the backward half read against *_reverse
    # the end pair alone (the backward half against the whole module) names no parameter either
    assert "differs" not in diagnose(whole, halves[1], {"segment": ([whole], [halves[1]])})


def _average_pool(name, image, counts_padding: bool, channels_last: bool):
    padded = np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ones = np.pad(np.ones_like(image), ((0, 0), (0, 0), (1, 1), (1, 1)))
    total = sum(padded[:, :, i:i + 5, j:j + 5] for i in range(3) for j in range(3))
    count = sum(ones[:, :, i:i + 5, j:j + 5] for i in range(3) for j in range(3))
    output = total / 9 if counts_padding else total / count
    to_layout = (lambda a: np.moveaxis(a, 1, -1)) if channels_last else (lambda a: a)  # noqa: E731
    return Layer(name, "pool", "AveragePooling2D" if channels_last else "AvgPool2d", to_layout(output),
                 inputs=[to_layout(image)], channels_last=channels_last,
                 config={"kernel": [3, 3], "strides": [1, 1], "pads": [(1, 1), (1, 1)], "type": "average"})


def test_average_pooling_that_counts_its_padding_on_one_side_only_is_named_from_the_layers_values():
    image = RNG.standard_normal((2, 3, 5, 5)) + 2.0
    reference = _average_pool("pool", image, counts_padding=True, channels_last=False)
    same = _average_pool("pool", image, counts_padding=False, channels_last=True)
    assert "average pooling count" in _diagnose([reference], [same])
    assert "count_include_pad=True" in _diagnose([reference], [same])
    explicit = _average_pool("pool", image, counts_padding=True, channels_last=True)
    assert "average pooling count" not in _diagnose([reference], [explicit])


def test_a_bidirectional_keras_wrapper_with_correct_halves_is_not_blamed_and_a_flipped_kernel_is_named():
    """The Bidirectional wrapper's weights by path in Keras's layout ((in, 4h) kernels, one summed bias) are read
    in PyTorch's form: correct halves leave no tensor unmatched (nor PyTorch's two biases, held as their sum)."""
    rng = np.random.default_rng(2)
    state = {f"{name}{suffix}": rng.standard_normal(shape) for suffix in ("", "_reverse")
             for name, shape in (("weight_ih_l0", (20, 6)), ("weight_hh_l0", (20, 5)), ("bias_ih_l0", (20,)),
                                 ("bias_hh_l0", (20,)))}
    summed = {name.replace("bias_ih", "bias"): value + state[name.replace("bias_ih", "bias_hh")]
              for name, value in state.items() if name.startswith("bias_ih")}
    whole = Layer("rnn", "lstm", "LSTM", NOWHERE, params={**state, **summed}, config={"bidirectional": True})

    def wrapper(zero_bias=False):
        params = {}
        for half, suffix in (("forward_lstm", ""), ("backward_lstm", "_reverse")):
            params[f"{half}/lstm_cell/kernel"] = state["weight_ih_l0" + suffix].T
            params[f"{half}/lstm_cell/recurrent_kernel"] = state["weight_hh_l0" + suffix].T
            bias = summed["bias_l0" + suffix]
            params[f"{half}/lstm_cell/bias"] = np.zeros_like(bias) if zero_bias and suffix else bias
        return Layer("rnn", "other", "Bidirectional", NOWHERE, params=params)

    assert _diagnose([whole], [wrapper()]) == "", _diagnose([whole], [wrapper()])
    assert "backward_lstm/lstm_cell/bias matches no tensor" in _diagnose([whole], [wrapper(zero_bias=True)])
    weight = RNG.standard_normal((3, 6, 4, 4))
    reference = [Layer("deconv", "conv", "ConvTranspose2d", NOWHERE, params={"weight": weight})]
    flipped = [Layer("deconv", "other", "Custom", NOWHERE, params={"kernel": weight.transpose(2, 3, 1, 0)[::-1, ::-1]})]
    assert _diagnose(reference, flipped).startswith("kernel flipped in space"), _diagnose(reference, flipped)


def _group_norm(op, image, groups, epsilon, channels_last):
    rng = np.random.default_rng(3)
    scale, shift = rng.uniform(0.5, 1.5, image.shape[1]), rng.uniform(-0.3, 0.3, image.shape[1])
    grouped = image.reshape(image.shape[0], groups, -1)
    normal = ((grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + epsilon))
    output = normal.reshape(image.shape) * scale[None, :, None, None] + shift[None, :, None, None]
    to_layout = (lambda a: np.moveaxis(a, 1, -1)) if channels_last else (lambda a: a)  # noqa: E731
    names = ("gamma", "beta") if channels_last else ("weight", "bias")
    return Layer("norm", "other", op, to_layout(output), inputs=[to_layout(image)], channels_last=channels_last,
                 params=dict(zip(names, (scale, shift))))


def test_a_group_norm_with_another_group_count_is_named_from_each_sides_values():
    image = RNG.standard_normal((2, 8, 4, 4)) * 2 + 1
    reference = _group_norm("GroupNorm", image, 2, 1e-5, channels_last=False)
    assert _diagnose([reference], [_group_norm("GroupNormalization", image, 4, 1e-5, True)]).startswith(
        "groups: 4 here, 2 in the reference")
    # the same count with another epsilon is not a group count
    assert not _diagnose([reference], [_group_norm("GroupNormalization", image, 2, 1e-3, True)]).startswith("groups")
