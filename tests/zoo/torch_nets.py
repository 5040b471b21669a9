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


# The families users bring next (issue 35): each the shape such nets have in the wild, small.
class GroupNormSiLUNet(nn.Module):
    """A diffusion-style residual stack: GroupNorm -> SiLU -> Conv twice per block, a strided Conv between
    stages, nearest upsampling back, GroupNorm head."""

    def __init__(self, width: int = 16, groups: int = 4, classes: int = 5) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.blocks = nn.ModuleList([self._block(width, groups), self._block(2 * width, groups)])
        self.down = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1)
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(2 * width, width, 3, padding=1))
        self.head = nn.Sequential(nn.GroupNorm(groups, width), nn.SiLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(width, classes))

    @staticmethod
    def _block(width: int, groups: int) -> nn.Sequential:
        return nn.Sequential(nn.GroupNorm(groups, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1),
                             nn.GroupNorm(groups, width), nn.SiLU(), nn.Conv2d(width, width, 3, padding=1))

    def forward(self, image):
        x = self.stem(image)
        x = x + self.blocks[0](x)
        y = self.down(x)
        y = y + self.blocks[1](y)
        return self.head(x + self.up(y))


class StyleTransferNet(nn.Module):
    """A fast style-transfer generator: reflection padding, Conv + InstanceNorm (affine) + ReLU, a residual
    block, nearest upsampling, Tanh: the InstanceNorm family."""

    def __init__(self, width: int = 8) -> None:
        super().__init__()

        def conv(inputs, outputs, kernel, stride=1):
            return nn.Sequential(nn.ReflectionPad2d(kernel // 2), nn.Conv2d(inputs, outputs, kernel, stride),
                                 nn.InstanceNorm2d(outputs, affine=True), nn.ReLU())
        self.down = nn.Sequential(conv(3, width, 5), conv(width, 2 * width, 3, 2))
        self.residual = nn.Sequential(conv(2 * width, 2 * width, 3), nn.ReflectionPad2d(1),
                                      nn.Conv2d(2 * width, 2 * width, 3), nn.InstanceNorm2d(2 * width, affine=True))
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), conv(2 * width, width, 3),
                                nn.ReflectionPad2d(4), nn.Conv2d(width, 3, 9), nn.Tanh())

    def forward(self, image):
        x = self.down(image)
        return self.up(x + self.residual(x))


class SuperResolutionNet(nn.Module):
    """ESPCN: Conv -> Tanh twice, then a Conv to 3 x r^2 channels and PixelShuffle(r): the pixel-shuffle family."""

    def __init__(self, scale: int = 2) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 5, padding=2), nn.Tanh(), nn.Conv2d(16, 8, 3, padding=1), nn.Tanh(),
                                  nn.Conv2d(8, 3 * scale * scale, 3, padding=1), nn.PixelShuffle(scale))

    def forward(self, image):
        return self.body(image)


class VideoNet(nn.Module):
    """A C3D-style clip classifier: Conv3d + BatchNorm3d + ReLU, MaxPool3d, a dilated Conv3d, adaptive average
    pooling: the 3-D convolution family."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(3, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(8, 16, 3, padding=2, dilation=2), nn.BatchNorm3d(16), nn.ReLU(), nn.MaxPool3d(2),
            nn.AdaptiveAvgPool3d(1), nn.Flatten())
        self.head = nn.Linear(16, classes)

    def forward(self, clip):
        return self.head(self.features(clip))


class DilatedContextNet(nn.Module):
    """Dilated convolutions in 2-D (DeepLab's atrous pyramid, its branches concatenated) and in 1-D (a WaveNet's
    causal stack, left-padded), HardSwish between: the dilated and HardSwish families."""

    def __init__(self, width: int = 8, classes: int = 5) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.Hardswish())
        self.atrous = nn.ModuleList([nn.Conv2d(width, width, 3, padding=rate, dilation=rate) for rate in (1, 2, 4)])
        self.project = nn.Sequential(nn.Conv2d(3 * width, width, 1), nn.Hardswish())
        self.causal = nn.ModuleList([nn.Conv1d(width, width, 2, dilation=rate) for rate in (1, 2, 4)])
        self.head = nn.Linear(width, classes)

    def forward(self, image):
        x = self.stem(image)
        x = self.project(torch.cat([branch(x) for branch in self.atrous], dim=1))
        sequence = x.flatten(2)  # (N, C, H*W) as a signal
        for layer in self.causal:
            sequence = nn.functional.hardswish(layer(nn.functional.pad(sequence, (layer.dilation[0], 0)))) + sequence
        return self.head(sequence.mean(2))


class BiGRUTagger(nn.Module):
    """Embedding -> 2-layer bidirectional GRU -> a tag per token: the bidirectional GRU family."""

    def __init__(self, vocabulary: int = 100, width: int = 16, tags: int = 6) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, width)
        self.gru = nn.GRU(width, width, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(2 * width, tags)

    def forward(self, tokens):
        return self.head(self.gru(self.embedding(tokens))[0])


class CausalDecoder(nn.Module):
    """A GPT-style decoder written by hand: token and position embeddings, a causal mask from torch.triu filled
    with -inf (Trilu, Where), attention by matmuls with a split of the fused QKV projection (Split), GELU MLP,
    pre-LayerNorm, tied output head: the causal-mask decoder family."""

    def __init__(self, vocabulary: int = 100, length: int = 16, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.tokens, self.positions = nn.Embedding(vocabulary, width), nn.Embedding(length, width)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, tokens):
        batch, length = tokens.shape
        x = self.tokens(tokens) + self.positions(torch.arange(length, device=tokens.device))
        q, k, v = self.qkv(self.norm1(x)).split(x.shape[-1], dim=-1)
        q, k, v = (t.reshape(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-2, -1) / (q.shape[-1] ** 0.5)
        mask = torch.triu(torch.ones(length, length, dtype=torch.bool, device=tokens.device), diagonal=1)
        attention = scores.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.out((attention @ v).transpose(1, 2).reshape(batch, length, -1))
        x = x + self.mlp(self.norm2(x))
        return self.norm3(x) @ self.tokens.weight.t()


def build_groupnorm_silu():
    torch.manual_seed(SEED)
    return calibrate_norms(GroupNormSiLUNet(), 3, 32, 32)


def build_style_transfer():
    torch.manual_seed(SEED)
    return calibrate_norms(StyleTransferNet(), 3, 32, 32)


def build_super_resolution():
    torch.manual_seed(SEED)
    return SuperResolutionNet().eval()


def build_video():
    torch.manual_seed(SEED)
    return calibrate_norms(VideoNet(), 3, 8, 16, 16)


def build_dilated():
    torch.manual_seed(SEED)
    return calibrate_norms(DilatedContextNet(), 3, 16, 16)


def build_bigru():
    torch.manual_seed(SEED)
    return BiGRUTagger(vocabulary=VOCABULARY).eval()


def build_causal_decoder():
    torch.manual_seed(SEED)
    return calibrate_norms(untie_constant_parameters(CausalDecoder(vocabulary=VOCABULARY)), 16)


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
