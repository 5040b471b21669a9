"""Speed variants of a timed run: the settings that decide speed on real hardware, one vocabulary for every
framework (`rosetta bench --precision --channels-last --compile`).

- precision: `fp32` (strict float32: TF32 off on GPUs that would use it), `tf32` (CUDA: TensorFloat-32 matmuls
  and convolutions), `amp-fp16` (CUDA: autocast to float16 with loss scaling), `amp-bf16` (autocast to
  bfloat16, CPU and GPU);
- channels_last: NHWC memory for 4-D tensors where the framework lets a run choose (PyTorch's memory_format);
- compile: the framework's graph compiler (torch.compile, Keras jit_compile (XLA), MXNet hybridize with
  static_alloc, ONNX Runtime's full graph optimisation, XLA on a SavedModel's signature).

Each runner and trainer applies what its framework has and, for what it has not, raises Unsupported with one
line that names the framework (SettingUnavailable): a benchmark shows it as a "not available" row, never as a silently other run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rosetta.errors import RosettaError, Unsupported

PRECISIONS = ("fp32", "tf32", "amp-fp16", "amp-bf16")
CUDA_ONLY = ("tf32", "amp-fp16")


class SettingUnavailable(Unsupported):
    """A speed or data-parallel setting the framework does not have: a "not available" row, not a failure."""


@dataclass(frozen=True)
class Speed:
    precision: str = "fp32"
    channels_last: bool = False
    compile: bool = False

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise RosettaError(f"--precision {self.precision}: choose from {', '.join(PRECISIONS)}")

    @classmethod
    def from_json(cls, data: dict | None) -> Speed:
        return cls(**(data or {}))

    def to_json(self) -> dict:
        return asdict(self)

    @property
    def label(self) -> str:
        return "+".join([self.precision] + (["channels-last"] if self.channels_last else [])
                        + (["compile"] if self.compile else []))

    def require(self, framework: str, device: str, precisions: tuple[str, ...] = ("fp32",),
                channels_last: str = "", compile: str = "", precision_why: str = "", compile_why: str = "") -> None:
        """Refuse (Unsupported) a setting `framework` does not have: `precisions` it runs, and whether it can
        do channels-last and compile (a non-empty string says how, for settings(); empty: it cannot)."""
        if self.precision in CUDA_ONLY and device != "cuda":
            raise SettingUnavailable(f"--precision {self.precision} is CUDA-only: not available on the CPU")
        if self.precision not in precisions:
            raise SettingUnavailable(f"--precision {self.precision} is not available in {framework}"
                              f"{precision_why and ': ' + precision_why}")
        if self.channels_last and not channels_last:
            raise SettingUnavailable(f"--channels-last is not available in {framework}: its layout is fixed by the model "
                              "(the data_format of its layers, or the graph's own)")
        if self.compile and not compile:
            raise SettingUnavailable(f"--compile is not available in {framework}{compile_why and ': ' + compile_why}")

    def settings(self, channels_last: str = "", compile: str = "") -> dict:
        """What a run recorded of its speed variant: the label, and how the framework applied it."""
        return {"speed": self.label, **({"channels_last": channels_last} if self.channels_last else {}),
                **({"compiled by": compile} if self.compile else {})}
