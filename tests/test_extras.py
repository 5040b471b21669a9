"""A framework or converter that is not installed (an extra left out, or one with no wheel for this Python) is
one line that says what installs it: a `rosetta env` row, and the CANNOT row of a target that needs it; never a
traceback, a failed run or an ERROR. The missing import is simulated: sys.modules[name] = None makes
`import name` raise ModuleNotFoundError, as it does where the package is not installed."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import rosetta
from rosetta import api, execution
from rosetta.errors import FrameworkMissing, Unsupported
from rosetta.extras import framework_missing, missing_message


def block(monkeypatch, module: str, holders: tuple[str, ...] = ()) -> None:
    """Make `import MODULE` fail as it does where it is not installed, and forget the `holders`, rosetta's
    modules that imported it when they were imported (an earlier test's)."""
    for name in [name for name in sys.modules if name == module or name.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)
    for name in holders:
        monkeypatch.delitem(sys.modules, name, raising=False)


@pytest.fixture
def small_onnx(tmp_path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weights = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                              "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], [weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # one every ONNX Runtime reads
    path = tmp_path / "small.onnx"
    onnx.save(model, path)
    return path


def test_missing_message_names_the_extra_in_one_line():
    assert missing_message("mxnet", (3, 12)) == "mxnet is not installed: pip install 'dl-rosetta[mxnet]'"
    assert missing_message("tensorflow.python.framework") == (
        "tensorflow is not installed: pip install 'dl-rosetta[tensorflow]'")
    assert "pip install --no-deps onnx2torch" in missing_message("onnx2torch")
    error = framework_missing(ModuleNotFoundError("No module named 'keras'", name="keras"))
    assert isinstance(error, FrameworkMissing) and isinstance(error, Unsupported)  # Unsupported: a CANNOT row
    assert str(error) == "keras is not installed: pip install 'dl-rosetta[keras]'"


def test_mxnet_on_python_3_13_says_it_cannot_be_installed_there():
    line = missing_message("mxnet", (3, 13))
    assert line.startswith("mxnet cannot be installed on Python 3.13 (") and "numpy < 2" in line
    assert "\n" not in line and "3.12 or older" in line


def test_env_row_for_a_missing_framework_says_what_installs_it_and_is_not_an_error(monkeypatch):
    import rosetta.frameworks as frameworks

    block(monkeypatch, "mxnet")
    asked = []

    def environment_of(entry, argument, *_args, **_kwargs):  # the installed frameworks' rows, without workers
        asked.append(argument["framework"])
        return {"version": "1.0", "devices": ["cpu"], "cuda": None, "cudnn": None, "settings": {}}

    monkeypatch.setattr(frameworks, "run_job", environment_of)
    listing = api.environment()
    row = next(row for row in listing.payload["frameworks"] if row["framework"] == "mxnet")
    assert "mxnet" not in asked  # no worker started for it
    assert row["missing"] == "mxnet is not installed: pip install 'dl-rosetta[mxnet]'" and row["error"] == ""
    assert not listing.failed  # `rosetta env` exits 0: an extra left out is not a broken install
    from rich.console import Console

    out = io.StringIO()
    listing.print(Console(file=out, width=250, color_system=None))
    line = next(line for line in out.getvalue().splitlines() if line.startswith("│ mxnet"))
    assert "not installed" in line and "pip install 'dl-rosetta[mxnet]'" in line  # the extra, not eaten as markup


def test_missing_framework_in_its_worker_is_a_cannot_row_naming_the_extra(monkeypatch, small_onnx, tmp_path):
    """MXNet's conversion runs in the mxnet family's worker: here run in this process, as that worker runs it,
    so that the import blocked here is the one the worker makes."""
    block(monkeypatch, "mxnet")
    monkeypatch.setenv(execution._IN_WORKER, "mxnet")
    report = rosetta.convert(small_onnx, to="mxnet", output_dir=tmp_path / "out").report
    (row,) = report.rows
    assert row.verdict == "CANNOT", row.reason
    assert row.reason.endswith("mxnet is not installed: pip install 'dl-rosetta[mxnet]'"), row.reason


def test_missing_converter_in_process_is_a_cannot_row_naming_what_installs_it(monkeypatch, small_onnx, tmp_path):
    block(monkeypatch, "onnx2torch", holders=("rosetta.frameworks.onnx2torch_converters",))
    report = rosetta.convert(small_onnx, to="torch", output_dir=tmp_path / "out").report
    (row,) = report.rows
    assert row.verdict == "CANNOT", row.reason
    assert "onnx2torch is not installed: pip install --no-deps onnx2torch" in row.reason, row.reason
    assert "Traceback" not in row.reason and "\n" not in row.reason


def test_a_missing_module_of_rosettas_own_is_no_install_to_suggest():
    """A bug of rosetta's (a module it names that does not exist) is said as such, not as 'not installed'."""
    from rosetta.extras import framework_missing

    assert framework_missing(ModuleNotFoundError("x", name="rosetta.nothing")) is None
    assert "pip install 'dl-rosetta[mxnet]'" in str(framework_missing(ModuleNotFoundError("x", name="mxnet.ndarray")))
