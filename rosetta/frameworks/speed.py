"""Speed variants of a timed run: the settings that decide speed on real hardware, one vocabulary for every
framework (`rosetta bench --precision --channels-last --compile --eager --cuda-graphs --resident-data`).

- precision: `fp32` (strict float32: TF32 off in PyTorch and TensorFlow, JAX's matmul precision `highest`),
  `tf32` (CUDA: TensorFloat-32 matmuls and convolutions), `amp-fp16` (CUDA: autocast to float16 with loss
  scaling), `amp-bf16` (autocast to bfloat16, CPU and GPU);
- channels_last: NHWC memory for 4-D tensors where the framework lets a run choose (PyTorch's memory_format);
- compile: the framework's graph compiler (torch.compile, Keras jit_compile (XLA), MXNet hybridize with
  static_alloc, ONNX Runtime's full graph optimisation, XLA on a SavedModel's signature);
- eager: no graph at all where the framework has an eager mode (Keras run_eagerly; PyTorch is eager unless
  --compile); without it Keras runs its steps as Keras compiles them by default (jax.jit, tf.function);
- cuda_graphs (CUDA): the whole step captured once and replayed as one CUDA graph (PyTorch);
- resident_data: the run's batches staged once on the device (or in pinned memory, the next batch's copy
  overlapped with the step), the steps run back to back, the loss read back and the device synchronised only
  where the clock is read.

Each runner and trainer applies what its framework has and, for what it has not, raises Unsupported with one
line that names the framework (SettingUnavailable): a benchmark shows it as a "not available" row, never as a
silently other run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rosetta.errors import RosettaError, Unsupported

PRECISIONS = ("fp32", "tf32", "amp-fp16", "amp-bf16")
CAPTURE_AFTER = 2  # eager steps before --cuda-graphs captures its graph (cuDNN autotuning, an optimiser's state)
CUDA_ONLY = ("tf32", "amp-fp16", "cuda_graphs")
# the on/off settings (their parameters; a label names each as "channels-last"), and why a framework lacks one
# where its caller gives no reason
SWITCHES = ("channels_last", "compile", "eager", "cuda_graphs", "resident_data")
LACKING = {"channels_last": "its layout is fixed by the model (the data_format of its layers, or the graph's own)",
           "eager": "it runs a graph",
           "cuda_graphs": "rosetta captures CUDA graphs in PyTorch only",
           "resident_data": "its runner takes and returns host arrays at every call"}


class SettingUnavailable(Unsupported):
    """A speed or data-parallel setting the framework does not have: a "not available" row, not a failure."""


@dataclass(frozen=True)
class Speed:
    precision: str = "fp32"
    channels_last: bool = False
    compile: bool = False
    eager: bool = False
    cuda_graphs: bool = False
    resident_data: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise RosettaError(f"precision={self.precision}: choose from {', '.join(PRECISIONS)}")
        if self.eager and (self.compile or self.cuda_graphs):
            raise RosettaError("eager= runs no graph: it cannot go with compile= or cuda_graphs=")

    @classmethod
    def from_json(cls, data: dict | None) -> Speed:
        return cls(**(data or {}))

    def to_json(self) -> dict:
        return asdict(self)

    def warmup(self, steps: int) -> int:
        """The untimed steps a run of this variant takes, at least `steps`: with CUDA graphs, enough for the
        eager steps and the capture, so that no capture is ever timed."""
        return max(steps, CAPTURE_AFTER + 1) if self.cuda_graphs else steps

    @property
    def label(self) -> str:
        return "+".join([self.precision] + [name.replace("_", "-") for name in SWITCHES if getattr(self, name)])

    def require(self, framework: str, device: str, precisions: tuple[str, ...] = ("fp32",), precision_why: str = "",
                **ways: str) -> None:
        """Refuse (SettingUnavailable) a setting `framework` does not have: the `precisions` it runs, and for each
        switch (SWITCHES) `ways`: NAME="how it does it" (for settings()) where it has it, NAME_why="why not"
        where it lacks it (LACKING otherwise)."""
        for name in CUDA_ONLY:
            if device != "cuda" and (self.precision == name or getattr(self, name, False)):
                option = f"precision={name}" if name in PRECISIONS else f"{name}="
                raise SettingUnavailable(f"{option} is CUDA-only: not available on the CPU")
        if self.precision not in precisions:
            raise SettingUnavailable(f"precision={self.precision} is not available in {framework}"
                                     f"{precision_why and ': ' + precision_why}")
        for name in SWITCHES:
            if getattr(self, name) and not ways.get(name):
                why = ways.get(f"{name}_why") or LACKING.get(name, "")
                raise SettingUnavailable(f"{name}= is not available in {framework}{why and ': ' + why}")

    def settings(self, **ways: str) -> dict:
        """What a run recorded of its speed variant: the label, and how the framework applied each switch on."""
        keys = {"channels_last": "channels_last", "compile": "compiled by"}
        return {"speed": self.label, **{keys.get(name, name.replace("_", " ")): ways.get(name, "")
                                         for name in SWITCHES if getattr(self, name)}}
