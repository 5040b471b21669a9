"""The real-model zoo: architectures nobody here wrote, from the libraries people port from (torchvision, timm,
Hugging Face transformers, Keras applications, the Gluon model zoo), and what users write every day in plain
torch.nn, each converted with `rosetta convert MODEL --to all`.

`ZOO` maps a model's name to its builder: `builder(folder)` writes the model file into `folder` and returns the
`rosetta convert` arguments that read it (the path, and any --input / --trust-code). A new model is one more
registered function. Keras and MXNet models are built in a fresh interpreter each (make_keras.py,
make_gluon.py): TensorFlow and MXNet cannot safely share a process, with each other or with the tests."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).parent
BUILD_TIMEOUT_S = 600
CONVERT_TIMEOUT_S = 3600

ZOO: dict[str, Callable[[Path], list[str]]] = {}


def register(name: str) -> Callable:
    def add(builder: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
        if name in ZOO:
            raise ValueError(f"zoo model {name!r} is registered twice")
        ZOO[name] = builder
        return builder
    return add


def _run_builder(script: str, *argv: str) -> None:
    """Runs a builder script in a fresh interpreter; its stderr's tail is the error when it fails."""
    done = subprocess.run([sys.executable, str(HERE / script), *argv], capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(argv)} failed:\n{done.stderr[-3000:]}")


def _keras_model(folder: Path, name: str) -> list[str]:
    path = folder / f"{name}.keras"
    _run_builder("make_keras.py", name, str(path))
    return [str(path)]


def _gluon_model(folder: Path, name: str) -> list[str]:
    prefix = folder / "model"
    _run_builder("make_gluon.py", name, str(prefix))
    return [f"{prefix}-symbol.json", "--input", "data:Nx3x32x32:float32"]


def _torch_factory(folder: Path, factory: str, *inputs: str) -> list[str]:
    """torch_nets.py copied as the user's net.py; its factory named as `net.py:FACTORY`."""
    net = folder / "net.py"
    shutil.copyfile(HERE / "torch_nets.py", net)
    return [f"{net}:{factory}", "--trust-code", *(a for spec in inputs for a in ("--input", spec))]


@register("keras-mobilenetv2")
def keras_mobilenetv2(folder: Path) -> list[str]:
    """keras.applications.MobileNetV2, alpha 0.35, 32x32."""
    return _keras_model(folder, "mobilenetv2")


@register("keras-efficientnetb0")
def keras_efficientnetb0(folder: Path) -> list[str]:
    """keras.applications.EfficientNetB0 at 32x32: squeeze-excitation, swish, in-model rescaling/normalisation."""
    return _keras_model(folder, "efficientnetb0")


@register("keras-resnet50")
def keras_resnet50(folder: Path) -> list[str]:
    """keras.applications.ResNet50 at 32x32."""
    return _keras_model(folder, "resnet50")


@register("keras-lstm-text")
def keras_lstm_text(folder: Path) -> list[str]:
    """Keras Embedding -> stacked LSTMs -> logits."""
    return _keras_model(folder, "lstm_text")


@register("keras-conv1d-text")
def keras_conv1d_text(folder: Path) -> list[str]:
    """Keras Embedding -> Conv1D/MaxPooling1D -> GlobalMaxPooling1D -> logits."""
    return _keras_model(folder, "conv1d_text")


@register("gluon-resnet18_v1")
def gluon_resnet18_v1(folder: Path) -> list[str]:
    """Gluon model zoo resnet18_v1, hybridized and exported."""
    return _gluon_model(folder, "resnet18_v1")


@register("gluon-mobilenetv2_0.25")
def gluon_mobilenetv2_025(folder: Path) -> list[str]:
    """Gluon model zoo mobilenetv2_0.25, hybridized and exported."""
    return _gluon_model(folder, "mobilenetv2_0.25")


@register("torch-transformer")
def torch_transformer(folder: Path) -> list[str]:
    return _torch_factory(folder, "build_transformer", "sequence:Nx10x16:float32")


@register("torch-bilstm")
def torch_bilstm(folder: Path) -> list[str]:
    return _torch_factory(folder, "build_bilstm", "tokens:Nx12:int64")


@register("torch-mobilenet-blocks")
def torch_mobilenet_blocks(folder: Path) -> list[str]:
    return _torch_factory(folder, "build_mobilenet_blocks", "image:Nx3x32x32:float32")


@register("torch-mixer")
def torch_mixer(folder: Path) -> list[str]:
    return _torch_factory(folder, "build_mixer", "image:Nx3x32x32:float32")


@register("torch-unet")
def torch_unet(folder: Path) -> list[str]:
    return _torch_factory(folder, "build_unet", "image:Nx3x32x32:float32")


@register("torch-densenet")
def torch_densenet(folder: Path) -> list[str]:
    return _torch_factory(folder, "build_densenet", "image:Nx3x32x32:float32")


# the families users bring next (issue 35), written the way such nets are in the wild (torch_nets.py)
FAMILY_MODELS = (
    ("torch-groupnorm-silu", "build_groupnorm_silu", ("image:Nx3x32x32:float32",)),
    ("torch-style-transfer", "build_style_transfer", ("image:Nx3x32x32:float32",)),
    ("torch-super-resolution", "build_super_resolution", ("image:Nx3x16x16:float32",)),
    ("torch-video-3d", "build_video", ("clip:Nx3x8x16x16:float32",)),
    ("torch-dilated-hardswish", "build_dilated", ("image:Nx3x16x16:float32",)),
    ("torch-bigru-tagger", "build_bigru", ("tokens:Nx12:int64:0:100",)),
    ("torch-causal-decoder", "build_causal_decoder", ("tokens:Nx16:int64:0:100",)),
)
for _name, _factory, _inputs in FAMILY_MODELS:
    register(_name)(lambda folder, factory=_factory, inputs=_inputs: _torch_factory(folder, factory, *inputs))

IMAGE, LARGE_IMAGE = "image:Nx3x32x32:float32", "image:Nx3x64x64:float32"
TOKENS = "input_ids:Nx16:int64:0:100"  # torch_nets.VOCABULARY
SOURCE_TOKENS, MASK, DECODER_STEP = "input_ids:Nx12:int64:0:100", "attention_mask:Nx12:int64:0:2", \
    "decoder_input_ids:Nx1:int64:0:100"
# (zoo name, factory in torch_nets.py, its --input specs): the libraries' own definitions
LIBRARY_MODELS = (
    ("tv-resnet18", "build_tv_resnet18", (IMAGE,)),
    ("tv-mobilenet_v3_small", "build_tv_mobilenet_v3_small", (IMAGE,)),
    ("tv-efficientnet_b0", "build_tv_efficientnet_b0", (IMAGE,)),
    ("tv-regnet_y_400mf", "build_tv_regnet_y_400mf", (IMAGE,)),
    ("tv-shufflenet_v2", "build_tv_shufflenet_v2", (IMAGE,)),
    ("tv-squeezenet1_1", "build_tv_squeezenet", (IMAGE,)),
    ("tv-convnext", "build_tv_convnext", (IMAGE,)),
    ("tv-vit", "build_tv_vit", (IMAGE,)),
    ("tv-swin", "build_tv_swin", (IMAGE,)),
    ("tv-resnet18-fpn", "build_tv_resnet18_fpn", (LARGE_IMAGE,)),
    ("tv-deeplabv3-mobilenet", "build_tv_deeplabv3", (LARGE_IMAGE,)),
    ("tv-fcn-resnet18", "build_tv_fcn", (LARGE_IMAGE,)),
    ("timm-mobilenetv3", "build_timm_mobilenetv3", (IMAGE,)),
    ("timm-tf_efficientnet_b0", "build_timm_tf_efficientnet_b0", (IMAGE,)),
    ("timm-mixnet_s", "build_timm_mixnet", (IMAGE,)),
    ("timm-resnest14d", "build_timm_resnest", (IMAGE,)),
    ("timm-convnext_atto", "build_timm_convnext", (IMAGE,)),
    ("timm-vit", "build_timm_vit", (IMAGE,)),
    ("timm-deit-distilled", "build_timm_deit_distilled", (IMAGE,)),
    ("timm-swin", "build_timm_swin", (IMAGE,)),
    ("timm-mobilevit_xxs", "build_timm_mobilevit", (LARGE_IMAGE,)),
    ("timm-poolformer_s12", "build_timm_poolformer", (IMAGE,)),
    ("timm-regnetz_005", "build_timm_regnet", (IMAGE,)),
    ("hf-bert", "build_hf_bert", (TOKENS, "attention_mask:Nx16:int64:0:2", "token_type_ids:Nx16:int64:0:2")),
    ("hf-gpt2", "build_hf_gpt2", (TOKENS,)),
    ("hf-t5", "build_hf_t5", (SOURCE_TOKENS, MASK, DECODER_STEP)),
    ("hf-bart", "build_hf_bart", (SOURCE_TOKENS, MASK, DECODER_STEP)),
    ("hf-vit", "build_hf_vit", ("pixel_values:Nx3x32x32:float32",)),
    ("hf-wav2vec2", "build_hf_wav2vec2", ("input_values:Nx1600:float32",)),
)
for _name, _factory, _inputs in LIBRARY_MODELS:
    register(_name)(lambda folder, factory=_factory, inputs=_inputs: _torch_factory(folder, factory, *inputs))
for _name, _file in (("keras-convnext_tiny", "convnext_tiny"), ("keras-efficientnetv2b0", "efficientnetv2b0"),
                     ("keras-transformer-encoder", "transformer_encoder")):
    register(_name)(lambda folder, name=_file: _keras_model(folder, name))
for _name in ("resnet18_v2", "mobilenet0.25"):
    register(f"gluon-{_name}")(lambda folder, name=_name: _gluon_model(folder, name))


@dataclass
class ZooRun:
    """One model's `rosetta convert --to all`: its result rows (README: --json), exit status and wall time."""
    model: str
    arguments: list[str]
    results: list[dict]
    exit_status: int
    seconds: float
    output: Path
    log: str

    @property
    def verdicts(self) -> dict[str, str]:
        return {row["target"]: row["verdict"] for row in self.results}

    @property
    def conversion_seconds(self) -> dict[str, float]:
        """Each written target's conversion time: its last step's, as its manifest records it (`stats`); the
        export all ONNX-route targets share is the `onnx` target's."""
        seconds = {}
        for manifest in sorted(self.output.glob("*/manifest.json")):
            stats = json.loads(manifest.read_text()).get("stats") or {}
            if "seconds" in stats:
                seconds[manifest.parent.name] = float(stats["seconds"])
        return seconds

    @property
    def verification_seconds(self) -> dict[str, float]:
        """Each verified target's time to load and run its artifact (the result rows' `seconds`)."""
        return {row["target"]: sum(float(v) for v in (row.get("seconds") or {}).values()) for row in self.results
                if row.get("seconds")}


def convert_to_all(name: str, folder: Path, *options: str, in_process: bool = False) -> ZooRun:
    """Builds zoo model `name` in folder/model/ and converts it to every target into folder/out/; the wall
    time is that of `rosetta convert` alone, in a process of its own as a user runs it (the benchmark), or
    `in_process` through `rosetta.cli.main`, whose workers stay warm for the next model (the tests)."""
    from tests.test_cli import run_here

    (folder / "model").mkdir(parents=True, exist_ok=True)
    arguments = ZOO[name](folder / "model")
    report = folder / "results.json"
    argv = ["convert", *arguments, "--to", "all", "-o", str(folder / "out"), "--json", str(report), "--no-progress",
            *options]
    started = time.perf_counter()
    if in_process:
        done = run_here(*argv)
    else:
        done = subprocess.run([sys.executable, "-m", "rosetta.cli", *argv], capture_output=True, text=True,
                              timeout=CONVERT_TIMEOUT_S)
    seconds = time.perf_counter() - started
    results = json.loads(report.read_text())["results"] if report.is_file() else []
    return ZooRun(name, arguments, results, done.returncode, seconds, folder / "out", done.stdout + done.stderr)
