"""A float64 reference checked piece by piece before it is believed (issue: a wrong float64 run inflates the
noise floor and lets wrong models PASS). Each framework's float64 path runs every piece of the model (an ONNX
node, a PyTorch leaf module, a Keras layer) in float64 on the float32 run's own values of its inputs and compares
the result with the float32 run's value of its output. Given the same inputs the two differ only by the float32
kernel's rounding, a few ulps at the output's scale; a piece that differs by more computes another function in
one of the two, and the float64 run is not believed from there on (ReferenceCheck.parted)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

FLOAT32_EPS = float(np.finfo(np.float32).eps)
# A node's float32 value against the float64 evaluator's on the same inputs, in float32 ulps at the output's
# scale, max|f64 - f32| / (eps32 * max|f64|). Measured (scripts/check_onnx_evaluator.py, docs/onnx-evaluator.md):
# at most 5.3 on every node of the reference models (ResNet-50's convolutions), 5 on the zoo's exports, and
# LOCAL_NODE_SUITE_WORST on ONNX's node test suite, where the cases the evaluator gets wrong start at 1e3.
# The bound sits at 2x the worst correct case measured anywhere and far under the smallest departure.
LOCAL_ULPS_BOUND = 64.0
# Two float64 implementations of one op agree to about this relative error when both are right.
FLOAT64_AGREEMENT = 1e-9


@dataclass
class NodeCheck:
    node: str
    op: str
    ulps: float  # float32 ulps at scale between ONNX Runtime's float32 value and the float64 one, same inputs
    by: str = "evaluator"  # which float64 implementation computes the node: evaluator, onnxruntime-double, rosetta
    note: str = ""


@dataclass
class ReferenceCheck:
    """What was checked of a float64 reference, and whether it can be believed (`parted` is None)."""

    implementation: str  # the float64 implementation, with its version
    against: str  # what it was checked against
    nodes: int = 0  # nodes whose float outputs were compared
    unchecked: int = 0  # float nodes that could not be (an input with no float32 value)
    worst: NodeCheck | None = None  # the largest difference among the nodes believed
    stand_ins: list[NodeCheck] = field(default_factory=list)  # nodes computed by another implementation
    parted: NodeCheck | None = None  # the first node where the references part and nothing stands in
    bound: float = LOCAL_ULPS_BOUND
    unit: str = "node"  # what a piece is: an ONNX "node", a PyTorch "leaf module", a Keras "layer"
    # what of the model no piece covers, where the pieces do not make up the whole function ("": they do)
    uncovered: str = ""

    @property
    def trusted(self) -> bool:
        return self.parted is None

    def describe(self) -> str:
        """One line for the row: which reference was used and why."""
        if self.parted is not None:
            return (f"float64 reference not used: {self.implementation} and {self.against} part at "
                    f"{self.unit} {self.parted.node} ({self.parted.op}): {ulps_text(self.parted.ulps)} float32 ulps at scale on the "
                    f"same inputs (a float32 kernel rounds to within {self.bound:g}){self.parted.note}")
        text = (f"float64 reference: {self.implementation}, checked {self.unit} by {self.unit} against "
                f"{self.against} ({self.nodes} {self.unit}s, worst {ulps_text(self.worst.ulps if self.worst else 0.0)} ulps at scale)")
        if self.stand_ins:
            text += "; " + ", ".join(f"{s.node} ({s.op}) by {s.by}" for s in self.stand_ins[:3]) + \
                    (f" and {len(self.stand_ins) - 3} more" if len(self.stand_ins) > 3 else "")
        return text

    def to_json(self) -> dict:
        return {**asdict(self), "trusted": self.trusted, "description": self.describe()}

    @classmethod
    def from_json(cls, data: dict) -> "ReferenceCheck":
        node = lambda value: NodeCheck(**value) if value else None  # noqa: E731
        fields = {k: v for k, v in data.items() if k not in ("trusted", "description")}
        return cls(**{**fields, "worst": node(fields.get("worst")), "parted": node(fields.get("parted")),
                      "stand_ins": [NodeCheck(**s) for s in fields.get("stand_ins", [])]})


def fully_checked(check: dict | None) -> bool:
    """Whether a check (ReferenceCheck.to_json) compared every float piece of the model and believed each one:
    the float64 run is then the model's function piece by piece, and the floor it gives is float32's own, however
    deep the model makes it (verify.tolerance.FLOOR_CEILING guards only what was not checked)."""
    return bool(check) and bool(check.get("trusted")) and not check.get("unchecked") and check.get("nodes", 0) > 0 \
        and not check.get("uncovered")


def ulps_text(value: float) -> str:
    return f"{value:.3g}" if math.isfinite(value) else str(value)


def local_ulps(float64_value, float32_value) -> float:
    """max|f64 - f32| in float32 ulps at the float64 value's scale (inf where only one is non-finite)."""
    wide = np.asarray(float64_value, dtype=np.float64)
    if wide.shape != np.shape(float32_value):
        return math.inf
    if not wide.size:
        return 0.0
    difference = np.subtract(wide, float32_value, dtype=np.float64)
    largest = float(np.max(np.abs(difference, out=difference)))
    if math.isfinite(largest):  # the usual case: one pass for the difference, one for the scale
        scale = max(float(np.max(wide)), -float(np.min(wide)))
        return largest / max(FLOAT32_EPS * scale, float(np.finfo(np.float32).tiny))
    narrow = np.asarray(float32_value, dtype=np.float64)
    finite = np.isfinite(wide) & np.isfinite(narrow)
    if not np.array_equal(np.isfinite(wide), np.isfinite(narrow)) or \
            not np.array_equal(wide[~finite], narrow[~finite], equal_nan=True):
        return math.inf
    return local_ulps(wide[finite], narrow[finite]) if finite.any() else 0.0
