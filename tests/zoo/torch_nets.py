"""Plain torch.nn architectures of the zoo, as PyTorch factories (`net.py:build_transformer`, ...): the shapes
users write every day, small enough to convert in seconds. Self-contained (imports torch only): the zoo copies
this file into a model's folder as net.py.

Every factory is seeded; every BatchNorm and LayerNorm gets random affine parameters and every BatchNorm the
running statistics of one training batch of inputs like rosetta's (uniform 0..1), so that outputs vary across
inputs and a normalisation mistake shows."""

import torch
from torch import nn

SEED = 0
CALIBRATION_BATCH = 16


def calibrate_norms(net: nn.Module, *example_shape: int) -> nn.Module:
    """Random norm affines, then BatchNorm running statistics from one batch; returns the net in eval mode."""
    torch.manual_seed(SEED + 1)
    norms = [m for m in net.modules() if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm))]
    with torch.no_grad():
        for norm in norms:
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.2, 0.2)
            if isinstance(norm, nn.modules.batchnorm._BatchNorm):
                norm.momentum = 1.0  # the running statistics become this batch's
        net.train()(torch.rand(CALIBRATION_BATCH, *example_shape))
    for norm in norms:
        if isinstance(norm, nn.modules.batchnorm._BatchNorm):
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
