"""Per-op conformance of every ONNX-route target on ONNX's own backend test suite.

The `onnx` wheel is the peer test suite: its node test cases (one model per case, generated in memory by
`onnx.backend.test.case.node.collect_testcases`, each with inputs and expected outputs) and the model test
cases it ships on disk (`pytorch-converted`, `pytorch-operator`, `simple`). Each case is written once to a
folder of its own (model.onnx + manifest + inputs.npz + expected.npz); then each (case, target) is a job of its
own (`case_job`, run by any executor: side by side locally, or on Ray), which converts the case along the
target's chain from ONNX, runs it, and compares with the suite's expected outputs:
- with the suite's own tolerance (`np.allclose` at the case's rtol/atol, 1e-3/1e-7 as `onnx.backend.test`
  uses), which gives the verdict, and
- with rosetta's float32-only rule (FLOAT32_ONLY_MULTIPLE x the output's float32 floor), recorded beside it.
Verdicts as `rosetta verify`'s: PASS; FAIL (converted without complaint, wrong numbers: the silent bugs);
CANNOT (the converter refused, with its one-line reason; the target's runtime rejected the converted artifact,
with its reason; or the case needs what no runner of rosetta takes: sequence, optional and map types, or a
dtype the target's framework lacks); ERROR (a crash or a hang, or an exception raised inside rosetta's own code:
a bug, named by its type and rosetta's frame as convert.runs.internal_error writes it, never a refusal).

Two modes. `plain`: the case as the suite writes it, every input a graph input. `initializers`: the inputs
that real models hold as constants (weights, biases, scales, shapes, pads, axes: PARAMETER_INPUTS, by the
op schema's input names) bound as initializers with the case's values, as an exporter writes them; a node
case gets this variant when it has such an input and keeps at least one graph input. Trainable converters
(rosetta's Keras mapper, onnx2torch, MXNet's importer) need these constant: the plain mode alone measures
them on inputs no real model gives them. A row records its mode and the inputs it bound.

This module holds the cases, the job and the expectations; `run.py` a whole run as `rosetta conformance` asks
for it (the cases chosen, an earlier run's rows kept, the results file rewritten as it goes, expectations
written or checked), which rosetta.conformance wraps.
"""

from __future__ import annotations

import functools
import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError
from rosetta.verify.results import CANNOT, ERROR, FAIL, PASS, failure_verdict

SUITES = ("node", "pytorch-converted", "pytorch-operator", "simple")
SUITE_RTOL, SUITE_ATOL = 1e-3, 1e-7  # onnx.backend.test's defaults; a node case may set its own
CASE_JOB = "rosetta.verify.conformance:case_job"
# ONNX tensor types that only ONNX Runtime among the targets has (strings, 8-bit floats, bfloat16, 4-bit and
# complex numbers): a case that reads or writes one is CANNOT elsewhere, with that reason
ONNX_RUNTIME_ONLY_DTYPES = ("str", "object", "bfloat16", "float8", "int4", "uint4", "complex", "float4")


PLAIN, INITIALIZERS = "plain", "initializers"
MODES = (PLAIN, INITIALIZERS)

# The inputs, by the op schema's input names, that real models hold as constants: weights, biases, scales,
# running statistics, shapes, pads, axes, bounds, masks (the `initializers` mode binds them).
PARAMETER_INPUTS = {
    **dict.fromkeys(("Conv", "ConvTranspose"), ("W", "B")),
    "Gemm": ("B", "C"), "MatMul": ("B",),
    **dict.fromkeys(("Add", "Sub", "Mul", "Div"), ("B",)), "Pow": ("Y",),
    "BatchNormalization": ("scale", "B", "input_mean", "input_var"),
    "InstanceNormalization": ("scale", "B"), "LayerNormalization": ("Scale", "B"),
    "GroupNormalization": ("scale", "bias"), "RMSNormalization": ("scale",), "PRelu": ("slope",),
    **dict.fromkeys(("GRU", "LSTM", "RNN"), ("W", "R", "B", "P")),
    **dict.fromkeys(("Reshape", "Expand", "CenterCropPad"), ("shape",)), "Tile": ("repeats",),
    "Pad": ("pads", "constant_value", "axes"), "Slice": ("starts", "ends", "axes", "steps"), "Split": ("split",),
    **dict.fromkeys(("Squeeze", "Unsqueeze", "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                     "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"), ("axes",)),
    "Resize": ("roi", "scales", "sizes"), "Upsample": ("scales",), "Clip": ("min", "max"), "Trilu": ("k",),
    "Where": ("condition",), "TopK": ("K",), "CumSum": ("axis",), "Dropout": ("ratio", "training_mode"),
    "OneHot": ("depth", "values"), "QuantizeLinear": ("y_scale", "y_zero_point"),
    "DequantizeLinear": ("x_scale", "x_zero_point"),
}


# The ops real models use, the set the coverage goal is measured on (`real_model_coverage`): the ops of the
# suite's pytorch-converted and pytorch-operator models, of the zoo's architectures (tests/zoo: Keras
# applications, Gluon's model zoo, torch's transformer, LSTM, U-Net, mixer, DenseNet), and of the families
# users bring next (vision transformers, a causal-mask decoder, GroupNorm/SiLU and InstanceNorm nets, pixel
# shuffle, 3-D and dilated convolutions, HardSwish, bidirectional GRUs).
REAL_MODEL_OPS = frozenset((
    # pytorch-converted / pytorch-operator
    "Abs", "Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Conv", "ConvTranspose", "Div", "Elu",
    "Exp", "Flatten", "Gather", "Gemm", "InstanceNormalization", "LeakyRelu", "LogSoftmax", "MatMul", "Max",
    "MaxPool", "Min", "Mul", "Neg", "PRelu", "Pad", "Pow", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Selu",
    "Sigmoid", "Slice", "Softmax", "Softplus", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile",
    "Transpose", "Unsqueeze",
    # the zoo
    "Cast", "ConstantOfShape", "Dropout", "Erf", "Expand", "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid",
    "Identity", "LayerNormalization", "LSTM", "Resize", "Shape", "Upsample", "Less", "Not",
    # the next families
    "Trilu", "Where", "Range", "Equal", "GroupNormalization", "DepthToSpace", "HardSwish", "GRU", "Gelu",
    "Einsum", "Loop", "ReduceMax",
))


@dataclass(frozen=True)
class Case:
    name: str
    suite: str
    ops: tuple[str, ...]  # the op types of its graph
    folder: str  # model.onnx, manifest.json, inputs.npz, expected.npz (or case.json's reason it cannot run)
    rtol: float = SUITE_RTOL
    atol: float = SUITE_ATOL
    mode: str = PLAIN
    bound: tuple[str, ...] = ()  # the inputs the `initializers` mode made initializers


@dataclass
class CaseResult:
    case: str
    suite: str
    ops: list
    target: str
    verdict: str
    reason: str = ""
    max_abs_error: float = math.nan
    suite_tolerance: dict = field(default_factory=dict)  # {"rtol", "atol", "passed"}
    calibrated: dict = field(default_factory=dict)  # {"multiple", "error_ratio", "passed"}
    seconds: float = 0.0
    versions: dict = field(default_factory=dict)  # of rosetta and the converters (runner_versions): --resume's key
    mode: str = PLAIN
    bound: list = field(default_factory=list)  # the inputs bound as initializers (mode `initializers`)

    def to_json(self) -> dict:
        return asdict(self)


# ---- the suite's cases, each written to a folder of its own -------------------------------------------------
def _suite_folder(suite: str) -> Path:
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / suite


def _read_data_set(folder: Path, prefix: str) -> list:
    """A data set's input_N.pb or output_N.pb, in order: arrays, or None for what is not a tensor."""
    from onnx import TensorProto, numpy_helper

    values = []
    for path in sorted(folder.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[-1])):
        tensor = TensorProto()
        try:
            tensor.ParseFromString(path.read_bytes())
            values.append(numpy_helper.to_array(tensor) if tensor.name or tensor.dims or tensor.data_type else None)
        except Exception:  # noqa: BLE001 - a SequenceProto or OptionalProto: not a tensor
            values.append(None)
    return values


def _graph_ops(model) -> tuple[str, ...]:
    """The op types a case exercises: its graph's, without the Constant nodes that only feed it."""
    ops = sorted({node.op_type for node in model.graph.node})
    return tuple(op for op in ops if op != "Constant") or tuple(ops)


def _raw_cases(suites, ops):
    """(name, suite, model, ops, inputs, outputs, rtol, atol) of every case of `suites` whose graph uses one of `ops`
    (all when None), in the suite's order."""
    import onnx

    wanted = set(ops) if ops else None
    for suite in suites:
        if suite == "node":
            import warnings

            from onnx.backend.test.case.node import collect_testcases

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the generators' own overflow warnings
                cases = collect_testcases(None)
            # a node case tests one op; its "_expanded" twin runs that op's function body instead (Loop, Cast,
            # ...), and counts under the op it expands
            tested = {case.name: _graph_ops(case.model) for case in cases if "_expanded" not in case.name}
            for case in cases:
                ops_tested = tested.get(case.name.split("_expanded")[0]) or _graph_ops(case.model)
                if case.kind != "node" or not case.data_sets or (wanted and not wanted & set(ops_tested)):
                    continue
                inputs, outputs = case.data_sets[0]
                yield case.name, suite, case.model, ops_tested, list(inputs), list(outputs), case.rtol, case.atol
        elif suite in SUITES:
            for folder in sorted(p for p in _suite_folder(suite).iterdir() if (p / "model.onnx").is_file()):
                model = onnx.load(str(folder / "model.onnx"))
                if wanted and not wanted & set(_graph_ops(model)):
                    continue
                data = folder / "test_data_set_0"
                yield (folder.name, suite, model, _graph_ops(model), _read_data_set(data, "input"),
                       _read_data_set(data, "output"), SUITE_RTOL, SUITE_ATOL)
        else:
            raise RosettaError(f"unknown conformance suite {suite!r}; choose from: {', '.join(SUITES)}")


def _tensor_entry(value_info) -> dict | None:
    """A manifest entry (name, shape, dtype) for a graph input or output, or None if it is not a tensor."""
    from onnx import helper

    kind = value_info.type.WhichOneof("value")
    if kind != "tensor_type":
        return None
    tensor = value_info.type.tensor_type
    dtype = _dtype_name(np.empty(0, helper.tensor_dtype_to_np_dtype(tensor.elem_type))) if tensor.elem_type else "float32"
    shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tensor.shape.dim]
    return {"name": value_info.name, "shape": shape, "dtype": dtype}


def _dtype_name(array) -> str:
    dtype = np.asarray(array).dtype
    return "str" if dtype.kind in "USO" else dtype.name


def _as_stored(value):
    """A case's value as .npz holds it: a TensorProto (the suite gives cast and float8 cases so) as its array,
    strings as numpy's str (an object array would need pickle to read back); None for a dtype only an extension
    of numpy has (float8, bfloat16, int4: .npz cannot hold them)."""
    from onnx import TensorProto, numpy_helper

    array = numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)
    if array.dtype.isbuiltin == 2:  # a dtype registered by ml_dtypes
        return None
    if array.dtype.kind in "OS":
        flat = [item.decode() if isinstance(item, bytes) else str(item) for item in array.ravel()]
        array = np.array(flat, dtype=str).reshape(array.shape)
    return array


SAMPLING_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}


def _samples(model) -> str:
    """The op whose outputs are random samples, if the graph has one (Dropout counts when given a training_mode):
    no runtime can match the suite's values for it, which came from NumPy's generator (ONNX Runtime's own
    backend-test filters skip these cases too)."""
    nodes = list(model.graph.node) + [node for function in model.functions for node in function.node]
    for node in nodes:
        if node.op_type in SAMPLING_OPS or (node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]):
            return node.op_type
    return ""


def parameter_inputs(model) -> tuple[str, ...]:
    """The graph inputs the `initializers` mode binds: read only at a PARAMETER_INPUTS slot of its op's schema
    (at the model's opset), leaving at least one graph input; () when there is none to bind."""
    from onnx import defs

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [v.name for v in model.graph.input if v.name not in initializers]
    parameter, other = set(), set()
    for node in model.graph.node:
        try:
            schema = defs.get_schema(node.op_type, opset, node.domain)
        except defs.SchemaError:
            schema = None
        names = [formal.name for formal in schema.inputs] if schema is not None else []
        for index, name in enumerate(node.input):
            slot = names[min(index, len(names) - 1)] if names else ""
            (parameter if slot in PARAMETER_INPUTS.get(node.op_type, ()) else other).add(name)
    bound = tuple(name for name in graph_inputs if name in parameter and name not in other)
    return bound if len(bound) < len(graph_inputs) else ()


def _bind(model, inputs: list, bound: tuple) -> tuple:
    """(the model with the `bound` graph inputs as initializers holding their values, the other inputs)."""
    import onnx
    from onnx import numpy_helper

    initializers = {init.name for init in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in initializers]
    values = dict(zip(names, inputs))
    bound_model = onnx.ModelProto()
    bound_model.CopyFrom(model)
    kept = [v for v in bound_model.graph.input if v.name not in bound]
    del bound_model.graph.input[:]
    bound_model.graph.input.extend(kept)
    for name in bound:
        value = values[name]
        array = numpy_helper.to_array(value) if isinstance(value, onnx.TensorProto) else np.asarray(value)
        bound_model.graph.initializer.append(numpy_helper.from_array(array, name))
    return bound_model, [values[name] for name in names if name not in bound]


def write_case(name: str, suite: str, model, ops: tuple, inputs: list, outputs: list, root: Path,
               rtol: float = SUITE_RTOL, atol: float = SUITE_ATOL, bound: tuple = ()) -> Case:
    """The case in root/suite/name/ as a source every target's chain can start from: an ONNX artifact folder
    (model.onnx + manifest.json) with inputs.npz and expected.npz; or case.json saying why no runner takes it.
    `bound`: graph inputs made initializers (the `initializers` mode), written to root/suite/name.initializers/."""
    import onnx

    from rosetta.manifest import Manifest, sha256_of

    mode = INITIALIZERS if bound else PLAIN
    folder = Path(root) / suite / (f"{name}.{mode}" if bound else name)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(shared_folder(folder), ignore_errors=True)  # made by an earlier run, maybe by other converters
    if bound:
        model, inputs = _bind(model, inputs, bound)
    initializers = {init.name for init in model.graph.initializer}
    graph_inputs = [v for v in model.graph.input if v.name not in initializers]
    entries_in = [_tensor_entry(v) for v in graph_inputs]
    entries_out = [_tensor_entry(v) for v in model.graph.output]
    case = Case(name, suite, tuple(ops), str(folder), rtol, atol, mode, tuple(bound))
    values = list(inputs) + list(outputs)
    if None in entries_in + entries_out or any(v is None or isinstance(v, (list, dict)) for v in values) \
            or len(inputs) != len(entries_in) or len(outputs) != len(entries_out):
        (folder / "case.json").write_text(json.dumps({"cannot": "sequence, optional or map values: rosetta's "
                                                                "runners take tensors only"}))
        return case
    sampler = _samples(model)
    if sampler:
        (folder / "case.json").write_text(json.dumps({"cannot": f"random values ({sampler}): samples cannot be "
                                                                "compared with the suite's by value"}))
        return case
    inputs, outputs = [_as_stored(v) for v in inputs], [_as_stored(v) for v in outputs]
    if any(v is None for v in inputs + outputs):
        dtypes = sorted({e["dtype"] for e in entries_in + entries_out if e["dtype"].startswith(ONNX_RUNTIME_ONLY_DTYPES)})
        (folder / "case.json").write_text(json.dumps({"cannot": f"dtype {', '.join(dtypes) or 'of an extension'}: "
                                                                "numpy has no such type to feed a runner"}))
        return case
    values = inputs + outputs
    onnx.save(model, str(folder / "model.onnx"))
    np.savez(folder / "inputs.npz", **{e["name"]: v for e, v in zip(entries_in, inputs)})
    np.savez(folder / "expected.npz", **{e["name"]: v for e, v in zip(entries_out, outputs)})
    dtypes = sorted({_dtype_name(v) for v in values} | {e["dtype"] for e in entries_in + entries_out})
    special = [d for d in dtypes if d.startswith(ONNX_RUNTIME_ONLY_DTYPES)]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    Manifest(artifact="model.onnx", format="onnx", source={"conformance": f"{suite}/{name}"},
             converter={"name": "onnx.backend.test", "version": onnx.__version__}, inputs=entries_in,
             outputs=entries_out, sha256=sha256_of(folder / "model.onnx"), opset=opset).write(folder)
    (folder / "case.json").write_text(json.dumps({"onnxruntime_only": ", ".join(special)} if special else {}))
    return case


def case_modes(model, modes=MODES) -> list[tuple[str, tuple]]:
    """(mode, inputs it binds) of each of `modes` a case has: `plain` always, `initializers` where
    parameter_inputs finds inputs to bind."""
    variants = [(PLAIN, ())] if PLAIN in modes else []
    bound = parameter_inputs(model) if INITIALIZERS in modes else ()
    return variants + ([(INITIALIZERS, bound)] if bound else [])


def collect_cases(root: Path, suites=("node",), ops=None, cases=None, modes=(PLAIN,)) -> list[Case]:
    """Every case of `suites` whose graph uses one of `ops` (None: all), or whose name is in `cases` (None:
    all), in each of `modes` it has (case_modes), written under `root`."""
    chosen = set(cases) if cases else None
    return [write_case(name, suite, model, case_ops, inputs, outputs, root, rtol, atol, bound)
            for name, suite, model, case_ops, inputs, outputs, rtol, atol in _raw_cases(suites, ops)
            if chosen is None or name in chosen for _, bound in case_modes(model, modes)]


# ---- one (case, target): a job -------------------------------------------------------------------------------
def _exact(expected: np.ndarray) -> bool:
    """Strings and booleans are compared exactly: they have no tolerance."""
    return expected.dtype.kind in "USO" or expected.dtype == bool


def _compare(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> tuple[bool, bool, float, float, str]:
    """(passed at the suite's tolerance, passed by the float32-only rule, max abs error, error / floor, how it
    differs: where the worst element is, or for strings and booleans, which are compared exactly, how many
    differ and the first)."""
    from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE, noise_floor

    if _exact(expected):
        differ = actual.astype(expected.dtype) != expected
        if not differ.any():
            return True, True, 0.0, 0.0, ""
        first = list(np.argwhere(differ)[0]) if differ.ndim else []
        return False, False, math.inf, math.inf, f"{int(differ.sum())} of {differ.size} values differ, first at {first}"
    reference = expected.astype(np.float64)
    values = actual.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: NaN, judged just below
        diff = np.abs(values - reference)
    both_nan = np.isnan(values) & np.isnan(reference)
    same_inf = np.isinf(reference) & (values == reference)
    diff = np.where(both_nan | same_inf, 0.0, diff)
    suite_ok = bool(np.all((diff <= atol + rtol * np.abs(np.where(np.isfinite(reference), reference, 0.0)))))
    finite = reference[np.isfinite(reference)]
    floor = noise_floor(finite.astype(np.float32), finite) if finite.size else 1.0
    diff = np.where(np.isnan(diff), np.inf, diff)  # a NaN where the suite has a number is as far off as it gets
    worst = float(diff.max()) if diff.size else 0.0
    where = str(list(np.unravel_index(int(diff.argmax()), diff.shape))) if diff.size and diff.ndim else ""
    return suite_ok, worst <= FLOAT32_ONLY_MULTIPLE * floor, worst, worst / floor, where


def runner_versions(target) -> dict[str, str]:
    """What decides a (case, target) verdict besides the case: rosetta's version, every converter's on the
    target's chain from ONNX, and the runtime's (read from package metadata, nothing imported)."""
    return dict(_runner_versions(target.name))


@functools.lru_cache(maxsize=None)
def _runner_versions(name: str) -> tuple:
    """Once per target and process: reading package metadata takes ~10 ms, a conformance case's whole run
    on ONNX Runtime less than one."""
    from importlib.metadata import PackageNotFoundError, version

    from rosetta.convert.registry import chain_versions
    from rosetta.convert.store import chain_from_onnx
    from rosetta.convert.targets import get_target

    target = get_target(name)
    versions = chain_versions(chain_from_onnx(target))
    for package in {"onnxruntime": ("onnxruntime", "onnxruntime-gpu"), "torch": ("torch",), "mxnet": ("mxnet",),
                    "keras": ("keras", "tensorflow-cpu", "tensorflow"),
                    "tensorflow": ("tensorflow-cpu", "tensorflow")}.get(target.runner, ()):
        try:
            versions.setdefault(package, version(package))
        except PackageNotFoundError:
            continue
    return tuple(versions.items())


def case_job(argument: dict) -> dict:
    """Job: one case converted to one target and run; its CaseResult as JSON. argument: {"case": Case as a dict,
    "target": name, "work": folder for the converted artifact (removed after)}."""
    from rosetta.convert.runs import internal_error, run_converted
    from rosetta.convert.targets import get_target
    from rosetta.errors import Unsupported, environment_cause, is_fault, one_line, vanished_folder
    from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE

    case = Case(**{**argument["case"], "ops": tuple(argument["case"]["ops"]), "bound": tuple(argument["case"]["bound"])})
    target = get_target(argument["target"])
    result = CaseResult(case.name, case.suite, list(case.ops), target.name, PASS, versions=runner_versions(target),
                        mode=case.mode, bound=list(case.bound))
    folder, started = Path(case.folder), time.perf_counter()
    info = json.loads((folder / "case.json").read_text())
    if info.get("cannot") or (info.get("onnxruntime_only") and target.runner != "onnxruntime"):
        result.verdict = CANNOT
        result.reason = info.get("cannot") or f"dtype {info['onnxruntime_only']}: no tensor type of {target.runner}'s"
        return result.to_json()
    staging = Path(argument["work"]) / f"{case.suite}-{case.name}-{case.mode}-{target.name}"
    stage = "conversion"
    try:
        artifact = converted(folder, target, staging)
        stage = "run"  # a runtime that rejects the artifact raises RuntimeRejected: the converter's CANNOT
        with np.load(folder / "inputs.npz") as inputs:
            outputs = run_converted(target.runner, artifact, {name: inputs[name] for name in inputs.files})
    except Exception as error:  # noqa: BLE001 - every failure is this cell's row
        error = vanished_folder(argument["work"], folder) or error  # --work-dir removed mid-run: not a refusal
        fault = is_fault(error)  # a crash, a hang, the machine out of memory or disk: never a refusal
        bug = internal_error(error)  # raised in rosetta's own code (a mapper, a rewrite): a bug, never a refusal
        result.verdict = ERROR if bug else CANNOT if isinstance(error, Unsupported) and not fault \
            else failure_verdict(stage, fault)
        message = environment_cause(error) or (f"rosetta bug: {bug}" if bug else one_line(error))
        result.reason = message if message.startswith(stage) else f"{stage} failed: {message}"
        result.seconds = round(time.perf_counter() - started, 3)
        return result.to_json()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        result.seconds = round(time.perf_counter() - started, 3)
    reasons, suite_ok, calibrated_ok, ratio = [], True, True, 0.0
    with np.load(folder / "expected.npz") as expected:
        for name in expected.files:
            wanted, got = expected[name], outputs.get(name)
            if got is None or np.shape(got) != wanted.shape:
                shape = None if got is None else tuple(np.shape(got))
                reasons.append(f"{name}: shape {shape}, the suite expects {wanted.shape}")
                suite_ok = calibrated_ok = False
                continue
            ok, calibrated, worst, output_ratio, where = _compare(np.asarray(got), wanted, case.rtol, case.atol)
            suite_ok, calibrated_ok = suite_ok and ok, calibrated_ok and calibrated
            result.max_abs_error = worst if math.isnan(result.max_abs_error) else max(result.max_abs_error, worst)
            ratio = max(ratio, output_ratio)
            if not ok and _exact(wanted):
                reasons.append(f"{name}: {where}")
            elif not ok:
                reasons.append(f"{name}: max abs error {worst:.3g} at {where} (rtol {case.rtol:g}, atol {case.atol:g})")
    result.suite_tolerance = {"rtol": case.rtol, "atol": case.atol, "passed": suite_ok}
    result.calibrated = {"multiple": FLOAT32_ONLY_MULTIPLE, "error_ratio": ratio, "passed": calibrated_ok}
    result.verdict, result.reason = (PASS, "") if suite_ok else (FAIL, "; ".join(reasons))
    return result.to_json()


SHARED_SUFFIX = ".converted"  # beside a case's folder: artifacts that more than one target's chain starts with


def shared_folder(folder: Path) -> Path:
    """Where the artifacts that several targets share of a case are kept: beside its folder, which is the
    conversions' source and is copied whole into each."""
    return Path(folder).with_name(Path(folder).name + SHARED_SUFFIX)


def shared_chain(target) -> tuple[str, ...]:
    """The longest start of `target`'s chain from ONNX (two formats or more) that another ONNX-route target's
    chain goes on from: tensorflow's ("onnx", "tensorflow") for tensorflow and tensorflow-roundtrip alike.
    Empty when its chain shares nothing."""
    from rosetta.convert.store import chain_from_onnx
    from rosetta.convert.targets import TARGETS

    chain = chain_from_onnx(target)
    others = [chain_from_onnx(t) for t in TARGETS if t.route == target.route and t.name != target.name]
    starts = [chain[:n] for n in range(len(chain), 1, -1)
              if any(other[:n] == chain[:n] and max(len(other), len(chain)) > n for other in others)]
    return starts[0] if starts else ()


def converted(folder: Path, target, staging: Path) -> Path:
    """The case converted along `target`'s chain from ONNX. The start of the chain that other targets share
    (shared_chain: onnx2tf's SavedModel, for the tensorflow cell and the round trip's) is converted once per
    case, by whichever cell comes first, and kept beside the case's folder for the others (under a lock, so cells
    run side by side wait rather than convert twice); a refusal there is kept too, as the same one-line
    reason. Each cell stays a self-contained job: one that finds nothing converts it itself."""
    from rosetta.convert.runs import internal_error
    from rosetta.convert.store import along, chain_from_onnx, from_onnx, run_conversion
    from rosetta.errors import Unsupported, is_fault, one_line
    from rosetta.scratch import exclusive

    shared = shared_chain(target)
    if not shared:
        return from_onnx(target)(folder, staging)
    root = shared_folder(folder)
    root.mkdir(exist_ok=True)
    artifact, refused = root / "-".join(shared), root / f"{'-'.join(shared)}.refused"
    with exclusive(root / f"{'-'.join(shared)}.lock"):
        if not artifact.exists() and not refused.exists():
            try:
                run_conversion(Path(folder), shared, artifact, force=True)
            except Exception as error:  # noqa: BLE001 - kept for the next cell, then raised as it was
                if not is_fault(error) and not internal_error(error):  # a bug is each cell's ERROR, not a refusal
                    refused.write_text(one_line(error))
                raise
    if refused.exists():
        raise Unsupported(refused.read_text())
    chain = chain_from_onnx(target)
    return along(chain[len(shared) - 1:])(artifact, staging)


def pair_key(suite: str, case: str, target: str, mode: str = PLAIN) -> str:
    """How a (case, target) pair is named in an expectations file and in a resumed run ("[initializers]" after
    the case in that mode)."""
    return f"{suite}/{case}{'' if mode == PLAIN else f' [{mode}]'} -> {target}"


def row_key(row: dict) -> str:
    """pair_key of a result row (CaseResult.to_json())."""
    return pair_key(row["suite"], row["case"], row["target"], row.get("mode", PLAIN))


def reusable(done: dict, targets: list) -> dict:
    """The rows of an earlier run (by pair_key) that a resumed run keeps: not ERROR rows (a crash or a hang may
    have been the machine's), and made by the same versions of rosetta, the converters and the runtime."""
    now = {target.name: runner_versions(target) for target in targets}
    return {key: row for key, row in done.items()
            if row.get("verdict") != ERROR and row.get("versions") == now.get(row.get("target"))}


def run_conformance(cases: list[Case], targets: list, work: Path, executor=None, progress: bool = False,
                    done: dict | None = None, on_rows=None, every_s: float = 60.0) -> list[CaseResult]:
    """Every (case, target) as a job of `executor` (default local); a job that dies is an ERROR row. `done`:
    {pair_key: row JSON} of an earlier run, whose rows are kept instead of run again, unless they are ERROR rows
    (a crash or a hang may have been the machine's) or were made by other versions of rosetta, the converters
    or the runtime (runner_versions); `on_rows(rows so far)` is called once `every_s` seconds have passed since
    it was last called, and at the end, so that a run that is stopped keeps what it finished (`rosetta
    conformance --resume`): by time, not by pairs, since a save of 15,000 rows takes 2 s."""
    from rosetta.execution import Job
    from rosetta.execution.executors import Task, get_executor
    from rosetta.convert.store import chain_from_onnx
    from rosetta.progress import progress_bar

    executor = executor or get_executor("local")
    Path(work).mkdir(parents=True, exist_ok=True)
    done = reusable(done or {}, targets)
    pairs = [(case, target) for case in cases for target in targets]
    keys = [pair_key(case.suite, case.name, target.name, case.mode) for case, target in pairs]
    results: dict[int, CaseResult] = {n: CaseResult(**done[key]) for n, key in enumerate(keys) if key in done}
    # the cells that go on from another target's artifact (shared_chain) last, so that it is there by then
    goes_on = {target.name: 0 < len(shared_chain(target)) < len(chain_from_onnx(target))
               for target in targets}
    todo = sorted((n for n in range(len(pairs)) if n not in results), key=lambda n: (goes_on[pairs[n][1].name], n))
    tasks = [Task(Job(CASE_JOB, {"case": asdict(pairs[n][0]), "target": pairs[n][1].name, "work": str(work)},
                      what=f"{pairs[n][0].name} -> {pairs[n][1].name}"), f"{pairs[n][0].name} -> {pairs[n][1].name}")
             for n in todo]

    saved = [time.monotonic()]

    def finished(index: int, outcome) -> None:
        n = todo[index]
        case, target = pairs[n]
        results[n] = CaseResult(**outcome.result) if not outcome.error else \
            CaseResult(case.name, case.suite, list(case.ops), target.name, ERROR, outcome.error,
                       mode=case.mode, bound=list(case.bound))
        if on_rows is not None and time.monotonic() - saved[0] >= every_s:
            on_rows([results[n] for n in sorted(results)])
            saved[0] = time.monotonic()

    with progress_bar(len(todo), "conformance", enabled=progress) as advance:
        executor.run(tasks, advance, on_outcome=finished)  # one queue: no slot waits for another's last cell
        advance(None)
    if on_rows is not None:
        on_rows([results[n] for n in sorted(results)])
    return [results[n] for n in range(len(pairs))]


# ---- expectations: the verdicts a run is checked against ----------------------------------------------------
# The full suite's verdicts on the pinned converters, checked in as ONNX Runtime checks in its backend-test
# filters: `rosetta conformance --check` with no FILE reads it; a converter upgrade that changes one is a diff.
EXPECTATIONS = Path(__file__).parent.with_name("conformance_expectations.json")  # beside this package


def expectations(rows: list[dict], targets: list) -> dict:
    """What `--write-expectations` writes and `--check` reads: {"versions": {target: runner_versions},
    "pairs": {pair_key: {"verdict", "reason"}}} (the verdict is checked; the reason says why, as ONNX Runtime's
    filters give theirs; the versions say which converters made them)."""
    return {"versions": {target.name: runner_versions(target) for target in targets},
            "pairs": {row_key(row): {"verdict": row["verdict"], **({"reason": row["reason"][:160]} if row["reason"] else {})}
                      for row in rows}}


def expectations_text(data: dict) -> str:
    """An expectations file as JSON with one line per pair, sorted: a converter upgrade's changes read as a diff
    of the lines that changed."""
    lines = [json.dumps(key) + ": " + json.dumps(value, sort_keys=True) for key, value in sorted(data["pairs"].items())]
    return ('{"versions": ' + json.dumps(data["versions"], sort_keys=True) + ',\n"pairs": {\n' + ",\n".join(lines)
            + "\n}}\n")


def check_expectations(rows: list[dict], expected: dict) -> tuple[list[str], list[str]]:
    """(differences, pairs the expectations do not name): a pair whose verdict is not the expected one is a
    difference either way (a fix is checked in with its new expectation, as a regression is caught)."""
    pairs = expected.get("pairs", {})
    differences, unnamed = [], []
    for row in rows:
        key = row_key(row)
        if key not in pairs:
            unnamed.append(key)
            continue
        if pairs[key]["verdict"] != row["verdict"]:
            reason = f" ({row['reason'][:120]})" if row.get("reason") else ""
            differences.append(f"{key}: expected {pairs[key]['verdict']}, got {row['verdict']}{reason}")
    return differences, unnamed


def version_drift(expected: dict, targets: list) -> list[str]:
    """One line per target whose converters or runtime differ from those the expectations were written with:
    a changed verdict there may be the upgrade's."""
    lines = []
    for target in targets:
        then, now = expected.get("versions", {}).get(target.name), runner_versions(target)
        if then is None:
            continue
        changed = [f"{package} {then.get(package, '-')} -> {now.get(package, '-')}"
                   for package in sorted(set(then) | set(now)) if then.get(package) != now.get(package)]
        if changed:
            lines.append(f"{target.name}: {', '.join(changed)}")
    return lines


# ---- coverage of the ops real models use -------------------------------------------------------------------
def real_model_coverage(rows: list[dict], reference: str = "onnxruntime") -> dict[tuple[str, str], dict]:
    """{(target, mode): {"passed", "of", "percent"}}: of the cases using an op of REAL_MODEL_OPS that
    `reference` PASSes in that mode, how many the target PASSes; cases the target cannot take for a dtype its
    framework lacks are left out of its count."""
    verdicts = {(row.get("suite", ""), row["case"], row.get("mode", PLAIN), row["target"]): row for row in rows}
    passing = {(suite, case, mode) for (suite, case, mode, target), row in verdicts.items()
               if target == reference and row["verdict"] == PASS and REAL_MODEL_OPS & set(row["ops"])}
    coverage = {}
    for target, mode in dict.fromkeys((row["target"], row.get("mode", PLAIN)) for row in rows):
        rows_here = [verdicts.get((suite, case, mode, target)) for suite, case, case_mode in passing if case_mode == mode]
        counted = [row for row in rows_here if row is not None and not row["reason"].startswith("dtype")]
        passed = sum(row["verdict"] == PASS for row in counted)
        coverage[(target, mode)] = {"passed": passed, "of": len(counted),
                                    "percent": round(100.0 * passed / len(counted), 1) if counted else 0.0}
    return coverage
