"""A framework is one row of rosetta.frameworks.FRAMEWORKS: every "module:name" entry of every row names what
exists, the pieces the layers above ask for come from the rows, the readers' table among them."""

from __future__ import annotations

import importlib
from dataclasses import fields

import pytest

from rosetta.frameworks import (FRAMEWORKS, Framework, data_parallel, data_parallel_frameworks, layer_jobs,
                                memory_exporter, memory_kinds)

ENTRIES = [field.name for field in fields(Framework) if field.name in
           ("entry", "trainer", "layer_trace", "layer_alone", "reference_check", "reader", "memory_export",
            "data_parallel")]


@pytest.mark.parametrize("framework", [framework.name for framework in FRAMEWORKS])
def test_every_entry_of_a_row_names_what_exists(framework):
    """Importing an entry's module imports no framework (each imports its own lazily), so this is cheap."""
    row = FRAMEWORKS.get(framework)
    for name in ENTRIES:
        entry = getattr(row, name)
        if entry:
            module, _, attribute = entry.partition(":")
            assert attribute and hasattr(importlib.import_module(module), attribute), f"{framework}.{name}: {entry}"
    assert not (row.data_parallel and row.no_data_parallel), "a path and a reason it has none"
    assert bool(row.memory_classes) == bool(row.memory_kind), "in-memory classes need their kind, and back"


def test_the_readers_come_from_the_rows():
    """sources.readers.READERS is built from the rows: a reader per format of each row with a `reader` entry, run
    where that framework runs, and readers.py names no reader of its own (a format's reader is added in its row)."""
    import ast
    from dataclasses import replace

    import rosetta.sources.readers as readers

    assert {(reader.format, reader.entry, reader.runner, reader.isolation) for reader in readers.READERS} == {
        (fmt, framework.reader, framework.name, framework.isolation)
        for framework in FRAMEWORKS if framework.reader for fmt in framework.formats}
    assert {reader.format for reader in readers.READERS} == {"onnx", "torch-export", "keras", "tensorflow", "mxnet"}
    assert readers.READERS.get("keras").isolation == "tensorflow"  # read in TensorFlow's worker, as Keras runs
    source = ast.parse(open(readers.__file__).read())
    named = [node.value for node in ast.walk(source) if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and node.value.startswith("rosetta.sources.") and ":" in node.value]
    assert not named, f"readers.py names readers of its own: {named}"
    # a new row's reader is a reader; a format two rows read is refused
    added = Framework("onnx-copy", "rosetta.frameworks.onnxruntime:OnnxRuntimeRunner", formats=("onnx-copy",),
                      isolation="tensorflow", reader="rosetta.sources.onnx:read")
    assert readers.readers_of([*FRAMEWORKS, added]).get("onnx-copy") == readers.Reader(
        "onnx-copy", "rosetta.sources.onnx:read", "onnx-copy", isolation="tensorflow")
    with pytest.raises(ValueError, match="model format 'onnx' is registered twice"):
        readers.readers_of([*FRAMEWORKS, replace(added, formats=("onnx",))])


def test_the_pieces_come_from_the_rows():
    assert layer_jobs("keras") == ("rosetta.frameworks.keras_layers:trace_job",
                                   "rosetta.frameworks.keras_layers:run_layer_job", "layer")
    assert layer_jobs("mxnet")[2] == "node"
    assert [name for name in FRAMEWORKS.keys() if layer_jobs(name)] == ["keras", "mxnet"]  # the others run here
    assert memory_kinds()[("torch.nn.modules.module", "Module")] == "torch"
    assert set(memory_kinds().values()) == {"torch", "keras", "gluon", "onnx"}
    assert memory_exporter("torch") is None and callable(memory_exporter("gluon"))
    assert data_parallel_frameworks() == ["torch", "keras"]
    assert data_parallel("torch").how == "torchrun + DistributedDataParallel"
    assert data_parallel("mxnet").startswith("MXNet 1.9's kvstore") and data_parallel("torch-code") == "not written"
