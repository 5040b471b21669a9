"""One module per framework behind one small interface (base.Runner). Each module is the only place that
imports its framework, and is imported only when a runner for it is asked for. A framework with an isolation
(TensorFlow, Keras, MXNet) runs in its family's worker process (rosetta.execution); its runner here is then a
proxy that sends each predict there as a job.

A framework is one `Framework` row in FRAMEWORKS: every per-framework piece the layers above use is an entry
here, named "module:function" (loaded on use, rosetta.registry.load_entry), so that verify/, bench/ and
sources/ ask this registry and never import a framework themselves (tests/test_layers.py checks that)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rosetta.execution import run_job, runs_here
from rosetta.frameworks.base import Runner
from rosetta.registry import Registry, load_entry


@dataclass(frozen=True)
class Framework:
    name: str
    entry: str  # "module:RunnerClass" of the runner that loads a converted artifact
    isolation: str = ""  # where it runs (rosetta.execution): "" in-process, else that family's warm worker
    trainer: str = ""  # "module:TrainerClass" that trains a converted artifact, if the framework can train one
    formats: tuple = ()  # artifact formats (manifest "format") this framework runs
    reads_code: bool = False  # its files can carry code: its runner takes trust_code (off unless --trust-code)
    own_environment: bool = True  # a row of `rosetta env` (torch-code and torch-export are torch's)
    # port locate: "module:function" tracing a model's layers (Layer rows in float32 or float64) and running one
    # layer alone on given inputs; jobs on an artifact folder in the framework's worker where it has an isolation
    # (layer_jobs), else functions called here (ONNX Runtime: a file; torch-code: a torch.nn.Module)
    layer_trace: str = ""
    layer_alone: str = ""
    layer_piece: str = ""  # what one traced piece is called in messages: "layer" or "node"
    reference_check: str = ""  # "module:function" checking its float64 run piece by piece (frameworks.reference_check)
    reader: str = ""  # "module:read" copying a user's file of this format into an artifact folder (sources.readers)
    memory_classes: tuple = ()  # (module, class) in an in-memory model's MRO that make it this framework's
    memory_kind: str = ""  # what sources.memory calls such an object ("gluon" for MXNet's HybridBlock)
    memory_export: str = ""  # "module:function" writing such an object to a file: (object, inputs, folder, label)
    #                          -> (path, input names or None); "" where it runs here as a module (torch)
    data_parallel: str = ""  # "module:Class" of its data-parallel training launcher and worker (bench --workers)
    no_data_parallel: str = ""  # why it has none, for a bench row's reason


FRAMEWORKS: Registry[Framework] = Registry("framework", key=lambda framework: framework.name)
for _framework in (
    Framework("onnxruntime", "rosetta.frameworks.onnxruntime:OnnxRuntimeRunner", formats=("onnx",),
              layer_trace="rosetta.frameworks.onnx_layers:trace_model", layer_piece="node",
              reference_check="rosetta.frameworks.onnx_reference:checked_float64_run",
              reader="rosetta.sources.onnx:read",
              memory_classes=(("onnx.onnx_ml_pb2", "ModelProto"), ("onnx.onnx_pb", "ModelProto")),
              memory_kind="onnx", memory_export="rosetta.frameworks.onnx_sources:export",
              no_data_parallel="ONNX Runtime does not train these models"),
    Framework("torch", "rosetta.frameworks.torch:TorchArtifactRunner", trainer="rosetta.train.torch:TorchArtifactTrainer",
              formats=("torch",), reference_check="rosetta.frameworks.torch_reference:check_float64_module",
              memory_classes=(("torch.nn.modules.module", "Module"),), memory_kind="torch",
              data_parallel="rosetta.train.torch_parallel:TorchDataParallel"),
    Framework("torch-code", "rosetta.frameworks.torch:TorchCodeRunner", formats=("torch-code",), reads_code=True,
              own_environment=False, layer_trace="rosetta.frameworks.torch_layers:trace_module",
              layer_alone="rosetta.frameworks.torch_layers:run_leaf", layer_piece="layer"),
    Framework("torch-export", "rosetta.frameworks.torch:TorchExportRunner", formats=("torch-export",), reads_code=True,
              own_environment=False, reader="rosetta.sources.torch:read"),
    Framework("tensorflow", "rosetta.frameworks.tensorflow:SavedModelRunner", isolation="tensorflow", formats=("tensorflow",),
              reads_code=True, reader="rosetta.sources.tensorflow:read",
              no_data_parallel="TensorFlow's MirroredStrategy does not drive Keras 3 models"),
    Framework("keras", "rosetta.frameworks.keras:KerasRunner", isolation="tensorflow", trainer="rosetta.train.keras:KerasTrainer",
              formats=("keras",), reads_code=True, layer_trace="rosetta.frameworks.keras_layers:trace_job",
              layer_alone="rosetta.frameworks.keras_layers:run_layer_job", layer_piece="layer",
              reference_check="rosetta.frameworks.keras_reference:check_float64_model",
              reader="rosetta.sources.keras:read", memory_classes=(("keras.src.models.model", "Model"),),
              memory_kind="keras", memory_export="rosetta.frameworks.keras_sources:export",
              data_parallel="rosetta.train.keras_parallel:KerasDataParallel"),
    Framework("mxnet", "rosetta.frameworks.mxnet:MXNetRunner", isolation="mxnet", trainer="rosetta.train.mxnet:MXNetTrainer",
              formats=("mxnet",), layer_trace="rosetta.frameworks.mxnet_layers:trace_job",
              layer_alone="rosetta.frameworks.mxnet_layers:run_node_job", layer_piece="node",
              reference_check="rosetta.frameworks.mxnet_reference:check_float64_symbol",
              reader="rosetta.sources.mxnet:read", memory_classes=(("mxnet.gluon.block", "HybridBlock"),),
              memory_kind="gluon", memory_export="rosetta.frameworks.mxnet_sources:export",
              no_data_parallel="MXNet 1.9's kvstore data parallelism is unmaintained (Apache retired MXNet in "
                               "2023); rosetta does not drive it"),
):
    FRAMEWORKS.register(_framework)


def layer_jobs(framework: str) -> tuple[str, str, str] | None:
    """Port locate on an artifact of `framework`: (the job tracing its layers, the job running one alone, what a
    piece is called), run in the framework's worker; None where it has no such jobs (a framework that runs here
    traces by function: Framework.layer_trace)."""
    found = FRAMEWORKS.get(framework, label=f"{framework!r}")
    if not (found.isolation and found.layer_trace):
        return None
    return found.layer_trace, found.layer_alone, found.layer_piece


def memory_kinds() -> dict[tuple[str, str], str]:
    """{(module, class) in an in-memory model's MRO: its kind}, from every framework's row."""
    return {cls: framework.memory_kind for framework in FRAMEWORKS for cls in framework.memory_classes}


def memory_exporter(kind: str):
    """The function writing an in-memory model of `kind` to a file (Framework.memory_export); None for one that
    runs here as a module."""
    entry = next(framework.memory_export for framework in FRAMEWORKS if framework.memory_kind == kind)
    return load_entry(entry) if entry else None


def data_parallel(framework: str):
    """The data-parallel launcher class of `framework` (Framework.data_parallel), or the reason it has none
    (a str; "not written" where its row says neither)."""
    found = next((row for row in FRAMEWORKS if row.name == framework), None)
    if found is not None and found.data_parallel:
        return load_entry(found.data_parallel)
    return (found and found.no_data_parallel) or "not written"


def data_parallel_frameworks() -> list[str]:
    return [framework.name for framework in FRAMEWORKS if framework.data_parallel]


def runner_for_format(fmt: str) -> str:
    """The framework that runs artifacts of format `fmt`."""
    for framework in FRAMEWORKS:
        if fmt in framework.formats:
            return framework.name
    from rosetta.errors import RosettaError

    raise RosettaError(f"no framework runs {fmt!r} artifacts")


def reads_code(framework: str) -> bool:
    return FRAMEWORKS.get(framework, label=f"{framework!r}").reads_code


def runner_class(framework: str):
    return load_entry(FRAMEWORKS.get(framework, label=f"{framework!r}").entry)


def trainable_frameworks() -> list[str]:
    return [framework.name for framework in FRAMEWORKS if framework.trainer]


def trainer_class(framework: str):
    entry = FRAMEWORKS.get(framework, label=f"{framework!r}").trainer
    if not entry:
        from rosetta.errors import Unsupported

        raise Unsupported(f"{framework} artifacts are inference-only; trainable: {', '.join(trainable_frameworks())}")
    return load_entry(entry)


def isolation(framework: str) -> str:
    return FRAMEWORKS.get(framework, label=f"{framework!r}").isolation


class WorkerRunner(Runner):
    """Proxy for a runner that lives in a worker process: each predict is one job there (the worker is warm:
    its framework is imported once)."""

    def __init__(self, framework: str, folder: Path, options: dict) -> None:
        self.framework_name, self.folder, self.options = framework, Path(folder), options
        self.reported_version = ""  # the framework version the worker ran (e.g. Keras with its backend)

    @classmethod
    def version(cls) -> str:  # the proxy has no framework of its own: see running_version
        return ""

    def running_version(self) -> str:
        return self.reported_version

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        result = run_job("rosetta.frameworks:predict_job", {"framework": self.framework_name,
                                                             "folder": str(self.folder), "feeds": feeds,
                                                             "options": self.options},
                         isolation(self.framework_name), f"{self.framework_name} inference",
                         settings={"threads": self.options.get("threads", 0)})
        self.reported_version, self.device_used = result["version"], result["device used"]
        self.reference_check = result.get("reference_check")
        return result["outputs"]


def environment_job(argument: dict) -> dict:
    """Job: a framework's environment (Runner.environment), read in the process that runs it."""
    return runner_class(argument["framework"]).environment()


def environments() -> list[dict]:
    """Every framework's environment, each read where that framework runs (TensorFlow and MXNet in their
    workers, as rosetta's runs use them). A framework that is not installed (an extra left out, or one with no
    wheel for this Python) is a row that says what installs it ("missing"); one that is installed but cannot be
    imported is a row with its error."""
    from rosetta.errors import one_line
    from rosetta.extras import installed, missing_message

    rows = []
    for framework in FRAMEWORKS:
        if not framework.own_environment:
            continue
        empty = {"framework": framework.name, "version": "", "devices": [], "cuda": None, "cudnn": None,
                 "settings": {}, "error": "", "missing": ""}
        if not installed(framework.name):  # each framework's module is called as the framework is
            rows.append({**empty, "missing": missing_message(framework.name)})
            continue
        try:
            found = run_job("rosetta.frameworks:environment_job", {"framework": framework.name}, framework.isolation,
                            f"{framework.name} environment")
            rows.append({"framework": framework.name, **found, "error": "", "missing": ""})
        except Exception as error:  # noqa: BLE001 - a framework that cannot be imported is its row's error
            rows.append({**empty, "error": one_line(error)})
    return rows


def predict_job(argument: dict) -> dict:
    """Job (rosetta.execution): load an artifact in its framework and run it once on `feeds`."""
    runner = load_runner(argument["framework"], Path(argument["folder"]), **argument["options"])
    outputs = {name: np.asarray(value) for name, value in runner.predict(argument["feeds"]).items()}
    return {"outputs": outputs, "version": runner.version(), "device used": runner.device_used,
            "reference_check": runner.reference_check}


def load_runner(framework: str, folder: Path, **options) -> Runner:
    """The runner for an artifact folder written by rosetta (artifact + manifest.json): the framework's own,
    or a proxy to its worker when it does not run in this process."""
    from rosetta.manifest import Manifest

    manifest = Manifest.read(folder)
    if not runs_here(isolation(framework)):
        return WorkerRunner(framework, folder, options)
    return runner_class(framework)(Path(folder), manifest, **options)


def layer_values_job(argument: dict) -> dict:
    """Job (in the framework's worker): the values of a model's inner layers or nodes called argument["names"]
    (Runner.layer_values of the Keras and MXNet runners) on argument["feeds"], in argument["precision"]."""
    from rosetta.manifest import Manifest

    folder = Path(argument["folder"])
    options = {"trust_code": argument.get("trust_code", False)} if reads_code(argument["runner"]) else {}
    runner = runner_class(argument["runner"])(folder, Manifest.read(folder), precision=argument["precision"],
                                              **options)
    return {"values": runner.layer_values(argument["feeds"], list(argument["names"]))}
