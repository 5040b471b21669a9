"""PyTorch factories of the zoo (`net.py:build_transformer`, ...): plain torch.nn architectures, the shapes users
write every day, and the libraries' own model definitions (torchvision, timm, Hugging Face transformers), built
from their constructors and configs with random weights at sizes that convert in seconds on 2 cores.
Self-contained (imports torch; each library factory imports its library): the zoo copies this file into a
model's folder as net.py, and rosetta runs it with --trust-code as it runs a user's.

Every factory is seeded; every normalisation layer gets random affine parameters and every BatchNorm the
running statistics of one training batch of inputs like rosetta's (uniform 0..1), so that outputs vary across
inputs and a normalisation mistake shows."""

import torch
from torch import nn

SEED = 0
CALIBRATION_BATCH = 16


def calibrate_norms(net: nn.Module, *example_shape: int) -> nn.Module:
    """Random affines of every normalisation layer (BatchNorm, LayerNorm, GroupNorm and the libraries' own:
    any module named *Norm* with a weight), then BatchNorm running statistics from one batch of shape
    `example_shape` (no batch is run where there is no BatchNorm); returns the net in eval mode."""
    torch.manual_seed(SEED + 1)
    norms = [m for m in net.modules() if "Norm" in type(m).__name__ and isinstance(getattr(m, "weight", None), nn.Parameter)]
    batch_norms = [m for m in norms if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        for norm in norms:
            norm.weight.uniform_(0.5, 1.5)
            if isinstance(getattr(norm, "bias", None), nn.Parameter):
                norm.bias.uniform_(-0.2, 0.2)
        for norm in batch_norms:
            norm.momentum = 1.0  # the running statistics become this batch's
        if batch_norms:
            net.train()(torch.rand(CALIBRATION_BATCH, *example_shape))
    for norm in batch_norms:
        norm.momentum = 0.1
    return net.eval()


class TransformerClassifier(nn.Module):
    """Projected features + learned positions -> 2-layer nn.TransformerEncoder (batch_first) -> mean -> logits."""

    def __init__(self, features: int = 16, length: int = 10, width: int = 32, classes: int = 5) -> None:
        super().__init__()
        self.project = nn.Linear(features, width)
        self.position = nn.Parameter(0.1 * torch.randn(1, length, width))
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, sequence):
        return self.head(self.encoder(self.project(sequence) + self.position).mean(1))


class BiLSTMClassifier(nn.Module):
    """Embedding -> 2-layer bidirectional LSTM -> both directions' final hidden states -> logits."""

    def __init__(self, vocabulary: int = 500, width: int = 32, classes: int = 3) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.lstm = nn.LSTM(width, width, num_layers=2, bidirectional=True, batch_first=True, dropout=0.2)
        self.head = nn.Linear(2 * width, classes)

    def forward(self, tokens):
        _, (hidden, _) = self.lstm(self.embedding(tokens))
        return self.head(torch.cat([hidden[-2], hidden[-1]], dim=1))


def conv_bn_relu6(inputs: int, outputs: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inputs, outputs, kernel, stride, kernel // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(outputs), nn.ReLU6(inplace=True))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 linear projection; a skip where shapes allow."""

    def __init__(self, inputs: int, outputs: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = inputs * expand
        self.skip = stride == 1 and inputs == outputs
        self.block = nn.Sequential(conv_bn_relu6(inputs, hidden, 1), conv_bn_relu6(hidden, hidden, 3, stride, hidden),
                                   nn.Conv2d(hidden, outputs, 1, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x):
        return x + self.block(x) if self.skip else self.block(x)


class MobileNetBlocks(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu6(3, 16, 3, 2), InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 4),
            InvertedResidual(24, 24, 1, 4), InvertedResidual(24, 32, 2, 4), InvertedResidual(32, 32, 1, 4),
            conv_bn_relu6(32, 64, 1))
        self.classifier = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(64, classes))

    def forward(self, image):
        return self.classifier(self.features(image))


class MixerBlock(nn.Module):
    """MLP-Mixer's block: a LayerNorm/GELU MLP across tokens, then one across channels, each with a skip."""

    def __init__(self, tokens: int, channels: int) -> None:
        super().__init__()
        self.token_norm = nn.LayerNorm(channels)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.channel_norm = nn.LayerNorm(channels)
        self.channel_mlp = nn.Sequential(nn.Linear(channels, 4 * channels), nn.GELU(),
                                         nn.Linear(4 * channels, channels))

    def forward(self, x):  # (N, tokens, channels)
        x = x + self.token_mlp(self.token_norm(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.channel_norm(x))


class MlpMixer(nn.Module):
    def __init__(self, channels: int = 32, patch: int = 4, size: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.patches = nn.Conv2d(3, channels, patch, patch)
        tokens = (size // patch) ** 2
        self.blocks = nn.Sequential(MixerBlock(tokens, channels), MixerBlock(tokens, channels))
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, classes)

    def forward(self, image):
        x = self.patches(image).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


def double_conv(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(inputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU(True),
                         nn.Conv2d(outputs, outputs, 3, padding=1, bias=False), nn.BatchNorm2d(outputs), nn.ReLU(True))


class TinyUNet(nn.Module):
    """Two levels down, then up once by ConvTranspose2d and once by bilinear Upsample (align_corners=True, as
    the popular PyTorch U-Net does), each concatenated with its skip: per-pixel logits."""

    def __init__(self, classes: int = 2) -> None:
        super().__init__()
        self.down1, self.down2, self.bottom = double_conv(3, 8), double_conv(8, 16), double_conv(16, 32)
        self.up2 = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.merge2 = double_conv(32, 16)
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.merge1 = double_conv(24, 8)
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, image):
        skip1 = self.down1(image)
        skip2 = self.down2(nn.functional.max_pool2d(skip1, 2))
        x = self.bottom(nn.functional.max_pool2d(skip2, 2))
        x = self.merge2(torch.cat([skip2, self.up2(x)], dim=1))
        return self.head(self.merge1(torch.cat([skip1, self.up1(x)], dim=1)))


class DenseLayer(nn.Module):
    """DenseNet-BC's layer: BN-ReLU-1x1 bottleneck, BN-ReLU-3x3, output concatenated to its input."""

    def __init__(self, inputs: int, growth: int) -> None:
        super().__init__()
        self.layer = nn.Sequential(nn.BatchNorm2d(inputs), nn.ReLU(True), nn.Conv2d(inputs, 4 * growth, 1, bias=False),
                                   nn.BatchNorm2d(4 * growth), nn.ReLU(True),
                                   nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False))

    def forward(self, x):
        return torch.cat([x, self.layer(x)], dim=1)


def dense_block(inputs: int, layers: int, growth: int) -> nn.Sequential:
    return nn.Sequential(*(DenseLayer(inputs + i * growth, growth) for i in range(layers)))


def transition(inputs: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(nn.BatchNorm2d(inputs), nn.ReLU(True), nn.Conv2d(inputs, outputs, 1, bias=False),
                         nn.AvgPool2d(2))


class TinyDenseNet(nn.Module):
    def __init__(self, growth: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, bias=False), dense_block(16, 3, growth), transition(16 + 3 * growth, 20),
            dense_block(20, 3, growth), nn.BatchNorm2d(20 + 3 * growth), nn.ReLU(True), nn.AdaptiveAvgPool2d(1),
            nn.Flatten())
        self.classifier = nn.Linear(20 + 3 * growth, classes)

    def forward(self, image):
        return self.classifier(self.features(image))


def build_transformer():
    torch.manual_seed(SEED)
    return calibrate_norms(TransformerClassifier(), 10, 16)


def build_bilstm():
    torch.manual_seed(SEED)
    return BiLSTMClassifier().eval()


def build_mobilenet_blocks():
    torch.manual_seed(SEED)
    return calibrate_norms(MobileNetBlocks(), 3, 32, 32)


def build_mixer():
    torch.manual_seed(SEED)
    return calibrate_norms(MlpMixer(), 3, 32, 32)


def build_unet():
    torch.manual_seed(SEED)
    return calibrate_norms(TinyUNet(), 3, 32, 32)


def build_densenet():
    torch.manual_seed(SEED)
    return calibrate_norms(TinyDenseNet(), 3, 32, 32)


# The libraries' own model definitions: each built from its constructor or config, with random weights (no
# download), small enough for 2 cores, then calibrated like the nets above. VOCABULARY: the token range of the
# text models' inputs (the zoo's --input says it too).
VOCABULARY = 100


def _built(build, *example_shape: int) -> nn.Module:
    torch.manual_seed(SEED)
    return calibrate_norms(untie_constant_parameters(build()), *example_shape)


def untie_constant_parameters(net: nn.Module) -> nn.Module:
    """Parameters initialised to one value (biases at 0, layer scales at 1e-6) get random values, as trained
    weights have: constant ones would make outputs blind to them, and torch's exporter merges equal
    initializers into Identity nodes that no trained model has."""
    with torch.no_grad():
        for parameter in net.parameters():
            if parameter.numel() > 1 and bool((parameter == parameter.flatten()[0]).all()):
                parameter.add_(0.1 * torch.randn_like(parameter))
    return net


def build_tv_resnet18():
    from torchvision.models import resnet18
    return _built(lambda: resnet18(num_classes=10), 3, 32, 32)


def build_tv_mobilenet_v3_small():
    from torchvision.models import mobilenet_v3_small
    return _built(lambda: mobilenet_v3_small(num_classes=10), 3, 32, 32)


def build_tv_efficientnet_b0():
    from torchvision.models import efficientnet_b0
    return _built(lambda: efficientnet_b0(num_classes=10), 3, 32, 32)


def build_tv_regnet_y_400mf():
    from torchvision.models import regnet_y_400mf
    return _built(lambda: regnet_y_400mf(num_classes=10), 3, 32, 32)


def build_tv_shufflenet_v2():
    from torchvision.models import shufflenet_v2_x0_5
    return _built(lambda: shufflenet_v2_x0_5(num_classes=10), 3, 32, 32)


def build_tv_squeezenet():
    from torchvision.models import squeezenet1_1
    return _built(lambda: squeezenet1_1(num_classes=10), 3, 32, 32)


def build_tv_convnext():
    """torchvision's ConvNeXt with three small stages: LayerNorm2d (a permuted LayerNorm), exact GELU, layer scale."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    stages = [CNBlockConfig(32, 64, 2), CNBlockConfig(64, 128, 2), CNBlockConfig(128, None, 2)]
    return _built(lambda: ConvNeXt(stages, num_classes=10), 3, 32, 32)


def build_tv_vit():
    from torchvision.models import VisionTransformer
    return _built(lambda: VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                                            mlp_dim=128, num_classes=10), 3, 32, 32)


def build_tv_swin():
    """torchvision's Swin (v1): shifted windows (roll, masks), relative position bias, patch merging."""
    from torchvision.models import SwinTransformer
    return _built(lambda: SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                                          window_size=[4, 4], num_classes=10), 3, 32, 32)


def build_tv_resnet18_fpn():
    """The detection backbone of torchvision's Faster R-CNN: ResNet-18 + FPN, its five levels as outputs
    (BatchNorm in place of the detection models' frozen one, so that it is calibrated like the rest)."""
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
    return _built(lambda: resnet_fpn_backbone(backbone_name="resnet18", weights=None, norm_layer=nn.BatchNorm2d,
                                              trainable_layers=5), 3, 64, 64)


def build_tv_deeplabv3():
    from torchvision.models.segmentation import deeplabv3_mobilenet_v3_large
    return _built(lambda: deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3), 3, 64, 64)


def build_tv_fcn():
    """torchvision's FCN head on a ResNet-18 body (fcn_resnet50's structure, 7x fewer parameters)."""
    from torchvision.models import resnet18
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.segmentation.fcn import FCN, FCNHead
    return _built(lambda: FCN(IntermediateLayerGetter(resnet18(), {"layer4": "out"}), FCNHead(512, 3)), 3, 64, 64)


def _timm(name: str, size: int = 32, **config) -> nn.Module:
    import timm
    return _built(lambda: timm.create_model(name, pretrained=False, num_classes=10, **config), 3, size, size)


def build_timm_mobilenetv3():
    return _timm("mobilenetv3_small_050")


def build_timm_tf_efficientnet_b0():
    """TensorFlow-ported EfficientNet: 'same' padding computed from the input size at run time."""
    return _timm("tf_efficientnet_b0")


def build_timm_mixnet():
    """MixNet: depthwise kernels of several sizes on channel groups, split and concatenated."""
    return _timm("mixnet_s")


def build_timm_resnest():
    """ResNeSt: split attention (grouped convolutions, a softmax across the radix)."""
    return _timm("resnest14d")


def build_timm_convnext():
    return _timm("convnext_atto")


def build_timm_vit():
    return _timm("vit_tiny_patch16_224", img_size=32, patch_size=8, depth=2)


def build_timm_deit_distilled():
    """DeiT with its distillation token: two heads, averaged at inference."""
    return _timm("deit_tiny_distilled_patch16_224", img_size=32, patch_size=8, depth=2)


def build_timm_swin():
    return _timm("swin_tiny_patch4_window7_224", img_size=32, window_size=4, embed_dim=32, depths=(2, 2),
                 num_heads=(2, 4))


def build_timm_mobilevit():
    """MobileViT: convolutions, then attention over unfolded 2x2 patches, folded back."""
    return _timm("mobilevit_xxs", size=64)


def build_timm_poolformer():
    """PoolFormer (MetaFormer): average pooling as the token mixer (padding not counted), GroupNorm."""
    return _timm("poolformer_s12")


def build_timm_regnet():
    return _timm("regnetz_005")


def _transformer(config_class, model_class, **config) -> nn.Module:
    """A Hugging Face model from a small config (no download): 2 layers, width 32, 4 heads."""
    import transformers
    config = getattr(transformers, config_class)(**config)
    return _built(lambda: getattr(transformers, model_class)(config))


def build_hf_bert():
    return _transformer("BertConfig", "BertForSequenceClassification", vocab_size=VOCABULARY, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=64, num_labels=3)


def build_hf_gpt2():
    """A causal decoder: GPT-2's language-model head (its key-value cache object is not a tensor output)."""
    return _transformer("GPT2Config", "GPT2LMHeadModel", vocab_size=VOCABULARY, n_embd=32, n_layer=2, n_head=4,
                        n_positions=64, bos_token_id=0, eos_token_id=0)


def build_hf_t5():
    """T5: the encoder and one decoder step (relative position buckets, RMS norm, gated-free ReLU MLP)."""
    return _transformer("T5Config", "T5ForConditionalGeneration", vocab_size=VOCABULARY, d_model=32, d_kv=8,
                        d_ff=64, num_layers=2, num_heads=4, decoder_start_token_id=0, pad_token_id=0,
                        eos_token_id=1)


def build_hf_bart():
    """BART: the encoder and one decoder step."""
    return _transformer("BartConfig", "BartForConditionalGeneration", vocab_size=VOCABULARY, d_model=32,
                        encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
                        encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, pad_token_id=1,
                        bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2)


def build_hf_vit():
    return _transformer("ViTConfig", "ViTForImageClassification", image_size=32, patch_size=8, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, num_labels=10)


def build_hf_wav2vec2():
    """Wav2Vec2: a convolutional feature encoder (GroupNorm), a grouped positional convolution, 2 layers."""
    return _transformer("Wav2Vec2Config", "Wav2Vec2ForSequenceClassification", vocab_size=32, hidden_size=32,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, conv_dim=(32, 32, 32),
                        conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                        num_conv_pos_embedding_groups=4, num_labels=4)
