"""A model's layers as dataflow, and two models matched at the tensors whose values agree: what
`rosetta verify REF PORT --locate` aligns (verify.port_locate) when the two models' layers do not line up one to one.

A *point* is one tensor a model computed: a layer's output, or an input a layer received that no layer before it
output (the result of code between layers: PyTorch's functional ops, a residual add). Its edges are read from the
values themselves: a layer that receives exactly an earlier point consumes it; a point computed by code between
layers depends on the outputs no layer had consumed yet (the branches it joins); a container (a PyTorch module
holding others, a Keras layer holding sublayers) depends on what its children left unconsumed.

Two points *agree* when their values are equal up to the port's layout (NHWC against NCHW, a flatten order, a head
axis split from the features) within the reference tensor's own noise floor, as the models' outputs are compared.
An agreeing pair is an *anchor*: both models hold the same tensor there, whatever layers lie between anchors."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rosetta.frameworks.layers import Layer

QUICK = 1e-3  # two tensors whose means differ by more than this fraction of their scale cannot agree


@dataclass
class Point:
    index: int
    value: np.ndarray
    producers: list[int] = field(default_factory=list)  # the layers that output it (a container and its last child)
    consumers: list[int] = field(default_factory=list)  # the layers that received it as it is
    parents: list[int] = field(default_factory=list)  # the points it was computed from by code between layers
    channels_last: bool = False
    recurrent: bool = False  # a GRU's or LSTM's output (every step on one side, the last on the other)
    feature: tuple | None = None  # (channels-last?, shape) of the last feature map before it (a flatten's order)
    is_input: bool = False

    @property
    def floating(self) -> bool:
        return self.value.dtype.kind == "f"

    @property
    def varies(self) -> bool:
        """Depends on the data: differs across the batch (a position embedding, a mask of ones, does not)."""
        value = self.value
        if value.ndim == 0 or value.shape[0] < 2:
            return value.size > 1
        return not bool(np.all(value == value[:1]))


class Flow:
    """One model's layers as points and edges (see the module docstring); `layers64`: the same layers in float64
    (the reference's), whose values give each point its float64 twin."""

    def __init__(self, layers: list[Layer], inputs: list[np.ndarray], layers64: list[Layer] | None = None):
        self.layers = layers
        self.points: list[Point] = []
        self.values64: dict[int, np.ndarray] = {}
        self.inputs_of: list[list[int]] = []
        self.output_of: list[int] = []
        self._index: dict[tuple, int] = {}
        fed = [np.asarray(a) for a in inputs]
        open_points: list[int] = []  # outputs no layer has received yet, in order
        twins = layers64 if layers64 is not None and len(layers64) == len(layers) else None
        for k, layer in enumerate(layers):
            received = []
            values = list(layer.inputs) or ([layers[k - 1].output] if k else [])
            for n, value in enumerate(values):
                value = np.asarray(value)
                point = self._find(value)
                if point is None:
                    point = self._add(value, layer)
                    if any(_same(value, a) for a in fed):
                        self.points[point].is_input = True
                    else:
                        self.points[point].parents = list(open_points)
                        open_points.clear()
                    self._twin(point, twins, k, n, "input")
                if point in open_points:
                    open_points.remove(point)
                self.points[point].consumers.append(k)
                received.append(point)
            self.inputs_of.append(received)
            output = np.asarray(layer.output)
            point = self._find(output)
            if point is None:
                point = self._add(output, layer)
                self._twin(point, twins, k, 0, "output")
                if self._is_container(k):  # what its children computed and left unconsumed, it joined
                    children = [p for p in open_points if any(self.contains(layer.name, layers[c].name)
                                                              for c in self.points[p].producers)]
                    self.points[point].parents = children
                    open_points[:] = [p for p in open_points if p not in children]
                open_points.append(point)
            self.points[point].producers.append(k)
            self.output_of.append(point)

    # ---- building ------------------------------------------------------------------------------------------
    def _key(self, value: np.ndarray) -> tuple:
        return value.shape, value.dtype.str, hash(np.ascontiguousarray(value).tobytes())

    def _find(self, value: np.ndarray) -> int | None:
        return self._index.get(self._key(value))

    def _add(self, value: np.ndarray, layer: Layer) -> int:
        feature = next(((p.channels_last, p.value.shape) for p in reversed(self.points) if 3 <= p.value.ndim <= 5),
                       None)
        point = Point(len(self.points), value, channels_last=layer.channels_last,
                      recurrent=layer.kind in ("gru", "lstm"), feature=feature)
        self.points.append(point)
        self._index[self._key(value)] = point.index
        return point.index

    def _twin(self, point: int, twins, k: int, n: int, which: str) -> None:
        if twins is None:
            return
        twin = twins[k].output if which == "output" else (twins[k].inputs[n] if n < len(twins[k].inputs) else None)
        if twin is not None and np.shape(twin) == self.points[point].value.shape:
            self.values64[point] = np.asarray(twin)

    @staticmethod
    def contains(container: str, name: str) -> bool:
        return name.startswith(container + ".") or name.startswith(container + "/")

    def _is_container(self, k: int) -> bool:
        return any(self.contains(self.layers[k].name, other.name) for other in self.layers[:k])

    # ---- reading -------------------------------------------------------------------------------------------
    def descendants(self, point: int) -> list[int]:
        """The points computed from `point`, in order."""
        found, stack = set(), [point]
        while stack:
            current = stack.pop()
            for k in self.points[current].consumers:
                out = self.output_of[k]
                if out != current and out not in found:
                    found.add(out)
                    stack.append(out)
            for other in self.points[current + 1:]:
                if current in other.parents and other.index not in found:
                    found.add(other.index)
                    stack.append(other.index)
        return sorted(found)

    def layers_between(self, starts: list[int], end: int) -> list[int]:
        """The layers whose output lies on a path from the `starts` points to `end`, `end`'s own included."""
        reach = set(starts)
        for s in starts:
            reach.update(self.descendants(s))
        upstream = {end} | {p for p in range(end) if p in reach and end in self.descendants(p)}
        return [k for k, out in enumerate(self.output_of) if out in upstream and out in reach and out not in starts]

    def name(self, point: int) -> str:
        producers = self.points[point].producers
        return self.layers[producers[-1]].name if producers else \
            f"input of {self.layers[self.points[point].consumers[0]].name}" if self.points[point].consumers else "?"


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return bool(np.array_equal(a.astype(np.float64), b.astype(np.float64)))
    return bool(np.array_equal(a, b))


# ---- the port's tensor in the reference's layout ---------------------------------------------------------------
def to_layout(value: np.ndarray, from_last: bool, to_last: bool) -> np.ndarray:
    """A 3-D to 5-D tensor moved between channels-first and channels-last (the batch stays first)."""
    value = np.asarray(value)
    if from_last == to_last or not 3 <= value.ndim <= 5:
        return value
    if to_last:
        return np.transpose(value, (0, *range(2, value.ndim), 1))
    return np.transpose(value, (0, value.ndim - 1, *range(1, value.ndim - 1)))


LAYOUTS = ("flatten", "moved", "same", "heads")  # the layout changes tried, the likeliest first


def _last_step(value: np.ndarray, one: Point, other: Point, ndim: int) -> np.ndarray:
    """A recurrent layer's output for every step (N, T, H) where the other side gives the last one (N, H)."""
    if (one.recurrent or other.recurrent) and value.ndim == 3 and ndim == 2:
        return value[:, -1]
    return value


def _reordered(value: np.ndarray, mine, theirs) -> np.ndarray | None:
    """A flattened feature map (N, C*H*W) in the other side's flatten order, or None where it is none."""
    if value.ndim != 2 or mine is None or theirs is None or mine[0] == theirs[0] or \
            int(np.prod(mine[1][1:])) != value.shape[1]:
        return None
    return to_layout(value.reshape(value.shape[0], *mine[1][1:]), mine[0], theirs[0]).reshape(value.shape)


def as_reference(port: Point, reference: Point, layout: str) -> np.ndarray | None:
    """The port point's value in the reference point's layout by one change of LAYOUTS, or None where that change
    does not give the reference's shape: a flattened feature map in the other flatten order; feature maps between
    channels-first and -last; the same layout (a tensor transposed by code is channels-last whatever its layer
    says); a head axis split from the features (N, T, heads, d). A recurrent layer's every step is taken at its
    last where the other side gives only that."""
    target = reference.value.shape
    value = _last_step(port.value, port, reference, len(target))
    if layout == "flatten":
        value = _reordered(value, port.feature, reference.feature) if value.shape == target else None
    elif layout == "moved":
        value = to_layout(value, port.channels_last, reference.channels_last) \
            if port.channels_last != reference.channels_last else None
    elif layout == "heads":
        value = value.reshape(target) if value.size == int(np.prod(target)) and value.ndim != len(target) and \
            value.shape[:2] == tuple(target[:2]) else None
    return value if value is not None and value.shape == target else None


def as_port(value: np.ndarray, reference: Point, port: Point, layout: str) -> np.ndarray:
    """A reference value put in the port point's layout: the inverse of as_reference's `layout`."""
    value = _last_step(np.asarray(value), reference, port, port.value.ndim)
    if layout == "flatten":
        value = _reordered(value, reference.feature, port.feature)
    elif layout == "moved":
        value = to_layout(value, reference.channels_last, port.channels_last)
    elif layout == "heads" or value.shape != port.value.shape:
        value = value.reshape(port.value.shape)
    return value.astype(port.value.dtype) if value.dtype != port.value.dtype else value


# ---- agreement -----------------------------------------------------------------------------------------------
def _signature(value: np.ndarray) -> tuple[float, float, float]:
    v = np.asarray(value, dtype=np.float64)
    if v.size == 0:
        return 0.0, 0.0, 0.0
    return float(v.mean()), float(np.abs(v).mean()), float(np.abs(v).max())


class Matcher:
    """Which points of the port agree with which of the reference (anchors), under `policy` per reference point."""

    def __init__(self, reference: Flow, port: Flow, policy):
        self.reference, self.port, self.policy = reference, port, policy
        self._signatures = {}
        self._compared: dict[tuple[int, int], object] = {}
        self.anchors: dict[int, list[int]] = {}  # reference point -> agreeing port points
        self.anchored_port: dict[int, list[int]] = {}
        for r, ref in enumerate(reference.points):
            for p, other in enumerate(port.points):
                if self._plausible(r, p) and self.agrees(r, p):
                    self.anchors.setdefault(r, []).append(p)
                    self.anchored_port.setdefault(p, []).append(r)

    def _signature(self, flow: Flow, point: int):
        key = (id(flow), point)
        if key not in self._signatures:
            self._signatures[key] = _signature(flow.points[point].value) if flow.points[point].floating or \
                flow.points[point].value.dtype.kind in "iub" else None
        return self._signatures[key]

    def _plausible(self, r: int, p: int) -> bool:
        ref, other = self.reference.points[r], self.port.points[p]
        if ref.value.size != other.value.size and not (ref.recurrent or other.recurrent):
            return False
        if ref.recurrent or other.recurrent:
            return True
        a, b = self._signature(self.reference, r), self._signature(self.port, p)
        if a is None or b is None:
            return False
        scale = max(a[2], b[2], 1e-12)
        return abs(a[0] - b[0]) <= QUICK * scale and abs(a[1] - b[1]) <= QUICK * scale

    def compared(self, r: int, p: int, value: np.ndarray | None = None):
        """The comparison (verify.compare.OutputComparison) of a port value (the port point p's own by default)
        with reference point r, in the layout that agrees (else the closest), or None where no layout maps one
        onto the other."""
        return self._best(r, p, value)[0]

    def layout(self, r: int, p: int) -> str:
        """The layout change under which port point p compares best with reference point r."""
        return self._best(r, p, None)[1]

    def _best(self, r: int, p: int, value: np.ndarray | None):
        if value is None and (r, p) in self._compared:
            return self._compared[(r, p)]
        ref, ref64 = self.reference.points[r], self.reference.values64.get(r)
        port = self.port.points[p] if value is None else _with(self.port.points[p], value)
        if (ref.recurrent or port.recurrent) and ref.value.ndim == 3 and port.value.ndim == 2:
            ref = _with(ref, ref.value[:, -1])  # every step here, the last one in the port
            ref64 = None if ref64 is None else ref64[:, -1]
        best = (None, "same")
        for layout in LAYOUTS:
            mapped = as_reference(port, ref, layout)
            if mapped is None:
                continue
            if not ref.floating:
                found = _Exact(bool(np.array_equal(np.asarray(mapped).astype(ref.value.dtype), ref.value)))
            else:
                found = _compare(ref, ref64, mapped, self.policy)
            if best[0] is None or found.passed or _ratio(found) < _ratio(best[0]):
                best = (found, layout)
            if found.passed:
                break
        if value is None:
            self._compared[(r, p)] = best
        return best

    def agrees(self, r: int, p: int, value: np.ndarray | None = None) -> bool:
        found = self.compared(r, p, value)
        return bool(found is not None and found.passed)


@dataclass
class _Exact:
    """An integer tensor's comparison: equal or not."""

    passed: bool
    reason: str = ""
    nan_count: int = 0

    @property
    def error_ratio(self) -> float:
        return 0.0 if self.passed else float("inf")

    max_abs_error = noise_floor = 0.0


def _ratio(found) -> float:
    ratio = found.error_ratio
    return ratio if np.isfinite(ratio) else float("inf")


def _with(point: Point, value: np.ndarray) -> Point:
    return Point(point.index, np.asarray(value), channels_last=point.channels_last, recurrent=point.recurrent,
                 feature=point.feature, is_input=point.is_input)


def _compare(ref: Point, ref64: np.ndarray | None, value: np.ndarray, policy):
    from rosetta.verify.compare import compare_output

    reference32 = ref.value if ref.floating else ref.value.astype(np.float32)
    reference64 = ref64 if ref64 is not None else reference32.astype(np.float64)
    value = np.asarray(value)
    return compare_output("tensor", value.astype(np.float64) if value.dtype.kind in "fiub" else value, reference32,
                          np.asarray(reference64, dtype=np.float64), policy)
