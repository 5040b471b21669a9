"""SavedModels are programs (rosetta.trust.savedmodel): attack SavedModels that would touch a marker file, read a
file outside their folder or run Python when loaded or served. Without --trust-code each is refused, with one
line naming the op, before TensorFlow loads it; rosetta's own SavedModels and ordinary Keras/TF ones pass.

The models are built once, in a fresh interpreter (TensorFlow stays out of the test process), which also runs
refused_ops on each (`models.refused`); the CLI cases then run rosetta on the folders."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from rosetta.errors import RosettaError
from rosetta.execution import run_job
from tests.security import one_line_refusal, run

# one test process builds the attack models and runs them all (the --trust-code test writes a marker that the
# others assert is absent)
pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.xdist_group("savedmodels")]

ROOT = Path(__file__).resolve().parents[2]
PURE = ("pure", "table", "tf1", "keras_conv", "keras_dense", "keras_lstm", "keras_gru", "keras_embedding")
ATTACKS = {  # model -> the ops refused_ops must name (an attack may hold more)
    "load_write": {"WriteFile"},  # a resource whose initializer writes a file when the model loads
    "serve_readwrite": {"WriteFile", "ReadFile"},  # the signature writes a file and returns an outside file
    "print_file": {"PrintV2"},  # tf.print(..., output_stream="file://...")
    "py_function": {"EagerPyFunc"},  # tf.py_function: Python
    "matching_files": {"MatchingFiles"},  # lists the folder of the outside file
    "dataset": {"TextLineDataset"},  # a tf.data pipeline reading the outside file
}


# --- the models (built in a fresh interpreter: python -c "...build(folder, markers, secret)") -------------

def build(folder: str, markers: str, secret: str) -> None:
    """Write the pure, the attack and the edited SavedModels under `folder`, and refused.json: refused_ops and
    the refusal message of each. Attack `name` would write `markers/name`."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    from rosetta.trust.savedmodel import check_saved_model_proto, refused_ops

    out, markers = Path(folder), Path(markers)
    spec = [tf.TensorSpec([None, 3], tf.float32, name="x")]

    def module(serve, resource=None) -> tuple:
        """A tf.Module holding a variable (and `resource`), served by serve(x, variable)."""
        holder = tf.Module()
        holder.v = tf.Variable(tf.ones([3]))
        holder.resource = resource
        function = tf.function(lambda x: serve(x, holder.v), input_signature=spec)
        holder.serve = function
        return holder, function

    def save(name, serve, resource=None) -> None:
        holder, function = module(serve, resource)
        tf.saved_model.save(holder, str(out / name), signatures={"serving_default": function})

    class LoadWrite(tf.saved_model.experimental.TrackableResource):
        def _create_resource(self):
            return tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[], shared_name="")

        def _initialize(self):
            tf.io.write_file(str(markers / "load_write"), "ran when the model loaded")
            return tf.raw_ops.AssignVariableOp(resource=self.resource_handle, value=1.0)

    save("pure", lambda x, v: {"y": tf.nn.relu(x * v)})
    save("load_write", lambda x, v: {"y": x * v}, LoadWrite())

    def serve_readwrite(x, v):
        tf.io.write_file(str(markers / "serve_readwrite"), "ran when the model served")
        return {"y": x * v, "secret": tf.io.read_file(secret)}

    save("serve_readwrite", serve_readwrite)

    def print_file(x, v):
        tf.print(x, output_stream=f"file://{markers / 'print_file'}")
        return {"y": x * v}

    save("print_file", print_file)
    save("py_function", lambda x, v: {"y": tf.py_function(lambda t: t, [x * v], tf.float32)})
    save("matching_files", lambda x, v: {"y": x * v, "files": tf.io.matching_files(str(Path(secret).parent / "*"))})
    save("dataset", lambda x, v: {"y": x * v, "text": tf.data.TextLineDataset(secret).reduce(
        tf.constant(""), lambda a, b: a + b)})

    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant(["a", "b"]), tf.constant([1, 2], tf.int64)), -1)
    holder, _ = module(lambda x, v: {"y": x * v})
    holder.table = table
    lookup = tf.function(lambda k: {"k": table.lookup(k)}, input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(holder, str(out / "table"), signatures={"serving_default": lookup})

    graph = tf.Graph()  # a TF1 SavedModel: reference variables and a main-graph saver, as MMdnn's emitter writes
    with graph.as_default(), tf.compat.v1.Session(graph=graph) as session:
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        w = tf.compat.v1.Variable(tf.ones([3, 2]), name="w", use_resource=False)
        y = tf.identity(tf.matmul(x, w), name="y")
        session.run(tf.compat.v1.global_variables_initializer())
        builder = tf.compat.v1.saved_model.Builder(str(out / "tf1"))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={
            "serving_default": tf.compat.v1.saved_model.predict_signature_def({"x": x}, {"y": y})})
        builder.save()

    import keras

    layers = keras.layers
    for name, shape, dtype, make in (
            ("keras_conv", (8, 8, 3), "float32", lambda i: layers.Dense(4)(layers.Flatten()(layers.MaxPooling2D()(
                layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(4, 3)(i))))))),
            ("keras_dense", (6,), "float32", lambda i: layers.Dropout(0.2)(layers.LayerNormalization()(
                layers.Dense(5, activation="softmax")(i)))),
            ("keras_lstm", (5, 4), "float32", lambda i: layers.Dense(2)(layers.LSTM(3)(i))),
            ("keras_gru", (5, 4), "float32", lambda i: layers.GRU(3, return_sequences=True)(i)),
            ("keras_embedding", (7,), "int32", lambda i: layers.GlobalAveragePooling1D()(layers.Embedding(20, 4)(i)))):
        inputs = keras.Input(shape, dtype=dtype)
        keras.Model(inputs, make(inputs)).export(str(out / name), verbose=False)

    _edit_savers(tf, out)
    refused = {}
    for path in sorted(p for p in out.iterdir() if p.is_dir()):
        proto = tf.__internal__.saved_model.parse_saved_model(str(path))
        try:
            check_saved_model_proto(proto, f"{path.name}/", trust_code=False)
            message = ""
        except RosettaError as error:
            message = str(error)
        refused[path.name] = {"ops": refused_ops(proto), "message": message}
    (out / "refused.json").write_text(json.dumps(refused))


def _edit_savers(tf, out: Path) -> None:
    """Edited copies of `pure` and `tf1` whose saver does what only the saver may, but elsewhere or otherwise."""
    from tensorflow.core.framework import node_def_pb2

    def const(name: str, text: str):
        node = node_def_pb2.NodeDef(name=name, op="Const")
        node.attr["dtype"].type = tf.string.as_datatype_enum
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(text))
        return node

    def edit(source: str, name: str, change) -> None:
        shutil.copytree(out / source, out / name)
        proto = tf.__internal__.saved_model.parse_saved_model(str(out / name))
        meta = proto.meta_graphs[0]
        nodes = {node.name: node for node in meta.graph_def.node}
        functions = {f.signature.name: f for f in meta.graph_def.library.function}
        change(meta, nodes, functions)
        (out / name / "saved_model.pb").write_bytes(proto.SerializeToString())

    def restore_function(meta, nodes, functions):
        return functions[nodes[meta.saver_def.restore_op_name].attr["f"].func.name]

    def restore_from_signature(meta, nodes, functions):  # the serving call now runs the restore too
        served = meta.signature_def["serving_default"].outputs["y"].name.split(":")[0]
        nodes[served].input.append("^" + meta.saver_def.restore_op_name)

    def save_as_restore(meta, nodes, functions):  # the restore op is the save: writes, merges and deletes
        meta.saver_def.restore_op_name = meta.saver_def.save_tensor_name.split(":")[0]

    def write_in_restore(meta, nodes, functions):
        function = restore_function(meta, nodes, functions)
        function.node_def.extend([const("where", "/tmp/rosetta-saver-wrote-this"), const("what", "x")])
        function.node_def.add(name="write", op="WriteFile", input=["where:output:0", "what:output:0"])

    def restore_elsewhere(meta, nodes, functions):  # the restore function reads a checkpoint of its choosing
        function = restore_function(meta, nodes, functions)
        function.node_def.append(const("elsewhere", "/home/someone/other/variables"))
        restore = next(node for node in function.node_def if node.op == "RestoreV2")
        restore.input[0] = "elsewhere:output:0"

    def restore_call_elsewhere(meta, nodes, functions):  # the main graph calls the restore on another path
        meta.graph_def.node.append(const("elsewhere", "/home/someone/other/variables"))
        nodes[meta.saver_def.restore_op_name].input[0] = "elsewhere"

    def restore_in_a_branch(meta, nodes, functions):  # the serving function reaches the restore by a Case
        served = functions[nodes[meta.signature_def["serving_default"].outputs["y"].name.split(":")[0]]
                           .attr["f"].func.name]
        case = served.node_def.add(name="case", op="Case", input=["index:output:0"])
        case.attr["branches"].list.func.add(name=restore_function(meta, nodes, functions).signature.name)
        served.node_def.append(const("index", "0"))

    def unreachable_write(meta, nodes, functions):  # a library function nothing calls
        function = meta.graph_def.library.function.add()
        function.signature.name = "__inference_nobody_calls_me_1"
        function.node_def.extend([const("where", "/tmp/rosetta-unreachable"), const("what", "x")])
        function.node_def.add(name="write", op="WriteFile", input=["where:output:0", "what:output:0"])

    def tf1_write_node(meta, nodes, functions):  # a main-graph node, run by name
        meta.graph_def.node.extend([const("where", "/tmp/rosetta-tf1"), const("what", "x")])
        meta.graph_def.node.add(name="write", op="WriteFile", input=["where", "what"])

    def tf1_restore_elsewhere(meta, nodes, functions):
        meta.graph_def.node.append(const("elsewhere", "/home/someone/other/variables"))
        nodes["save/RestoreV2"].input[0] = "elsewhere"

    def tf1_suffix_escapes(meta, nodes, functions):  # the save joins the prefix with a suffix that climbs out
        for node in meta.graph_def.node:
            if node.op == "Const" and node.attr["value"].tensor.string_val == [b"_temp/part"]:
                node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto("/../../../../tmp/rosetta-escaped"))

    for source, name, change in (("pure", "restore_from_signature", restore_from_signature),
                                 ("pure", "save_as_restore", save_as_restore),
                                 ("pure", "write_in_restore", write_in_restore),
                                 ("pure", "restore_elsewhere", restore_elsewhere),
                                 ("pure", "restore_call_elsewhere", restore_call_elsewhere),
                                 ("pure", "restore_in_a_branch", restore_in_a_branch),
                                 ("pure", "unreachable_write", unreachable_write),
                                 ("tf1", "tf1_write_node", tf1_write_node),
                                 ("tf1", "tf1_restore_elsewhere", tf1_restore_elsewhere),
                                 ("tf1", "tf1_suffix_escapes", tf1_suffix_escapes)):
        edit(source, name, change)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("savedmodels")
    folder, markers, secret = root / "models", root / "markers", root / "outside" / "secret.txt"
    folder.mkdir()
    markers.mkdir()
    secret.parent.mkdir()
    secret.write_text("a file outside every model's folder\n")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", "import sys; from tests.security.test_savedmodel import build; "
                           "build(*sys.argv[1:])", str(folder), str(markers), str(secret)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not list(markers.iterdir()), "building the models ran an attack"
    refused = json.loads((folder / "refused.json").read_text())
    return SimpleNamespace(folder=folder, markers=markers, secret=secret, refused=refused, root=root)


# --- refused_ops on the parsed protobufs -------------------------------------------------------------------

@pytest.mark.parametrize("name", PURE)
def test_pure_savedmodels_refuse_nothing(models, name):
    """A tf.Module with a variable, a StaticHashTable (its initializer is a resource initializer), a TF1
    Builder SavedModel and Keras 3 exports of Conv/BatchNorm/Dense/LayerNorm/Dropout/LSTM/GRU/Embedding."""
    assert models.refused[name] == {"ops": [], "message": ""}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_ops_are_refused_by_name(models, name):
    refused = models.refused[name]
    assert ATTACKS[name] <= {op for op, _ in refused["ops"]}, refused
    message = refused["message"]
    assert "\n" not in message and message.startswith(f"{name}/ holds op ") and "(in function __inference_" in \
        message and message.endswith("; pass trust_code=True if you trust it"), message
    assert any(f"op {op} " in message for op in ATTACKS[name]), message


def test_refusals_say_what_the_op_does(models):
    messages = {name: models.refused[name]["message"] for name in ATTACKS}
    assert "which reads or writes files when the model runs" in messages["load_write"]
    assert "(in function __inference__initializer_" in messages["load_write"]  # the resource's initializer
    assert "which runs Python code when the model runs" in messages["py_function"]
    assert "which prints to the log or to a file" in messages["print_file"]
    assert "op TextLineDataset " in messages["dataset"]  # the file source, before the pipeline's other ops


@pytest.mark.parametrize("name, op, fragment", [
    ("restore_from_signature", "RestoreV2", "which reads or writes files"),  # the signature reaches the restore
    ("save_as_restore", "SaveV2", "which reads or writes files"),  # saving (and deleting) on the restore side
    ("write_in_restore", "WriteFile", "which reads or writes files"),  # only checkpoint ops in the saver
    ("restore_in_a_branch", "RestoreV2", "which reads or writes files"),  # a Case branch (a list of func)
    ("unreachable_write", "WriteFile", "(in function __inference_nobody_calls_me_1)"),  # checked all the same
    ("tf1_write_node", "WriteFile", "(node write)"),
    ("restore_elsewhere", "RestoreV2", "at a path of the model's own choosing"),
    ("restore_call_elsewhere", "RestoreV2", "at a path of the model's own choosing"),
    ("tf1_restore_elsewhere", "RestoreV2", "at a path of the model's own choosing"),
    ("tf1_suffix_escapes", "SaveV2", "at a path of the model's own choosing"),
])
def test_checkpoint_ops_only_in_the_saver_on_the_loaders_path(models, name, op, fragment):
    refused = models.refused[name]
    assert op in {o for o, _ in refused["ops"]}, refused
    assert fragment in refused["message"] and "\n" not in refused["message"], refused["message"]


def test_refused_ops_without_tensorflow():
    """The check runs on duck-typed protobufs: rosetta.trust imports no framework."""
    code = "import sys, rosetta.trust.savedmodel; assert 'tensorflow' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


def test_trust_code_skips_the_check():
    from rosetta.trust.savedmodel import check_saved_model_proto

    check_saved_model_proto(object(), "anything/", trust_code=True)  # not even looked at


# --- through rosetta: the reader, the runner, the worker job -----------------------------------------------

@pytest.mark.parametrize("command, name", [("convert", "load_write"), ("verify", "serve_readwrite"),
                                           ("convert", "print_file"), ("verify", "dataset")])
def test_cli_refuses_before_tensorflow_loads(models, tmp_path, command, name):
    path = models.folder / name
    if command == "convert":
        argv = ("convert", path, "--to", "onnx", "-o", tmp_path / "out")
    else:
        argv = ("verify", path, models.folder / "pure")
    line = one_line_refusal(*run(*argv), f"{path} holds op ", "pass --trust-code if you trust it")
    assert any(f"op {op} " in line for op in ATTACKS[name]), line
    assert not (models.markers / name).exists() and not (tmp_path / "out").exists()


def test_verify_refuses_a_forged_rosetta_folder(models, tmp_path):
    """A folder that looks like rosetta's tensorflow output: its runner checks the SavedModel too."""
    from rosetta.manifest import Manifest, sha256_of

    forged = tmp_path / "forged"
    shutil.copytree(models.folder / "load_write", forged / "saved_model")
    signature = [{"name": "x", "shape": ["batch", 3], "dtype": "float32"}]
    Manifest(artifact="saved_model", format="tensorflow", source={"model": "cnn", "seed": 0},
             converter={"name": "onnx2tf", "options": {}}, inputs=signature,
             outputs=[{"name": "y", "shape": ["batch", 3], "dtype": "float32"}],
             sha256=sha256_of(forged / "saved_model"), chain=["torch", "onnx", "tensorflow"]).write(forged)
    one_line_refusal(*run("verify", forged, models.folder / "pure"), "op WriteFile ",
                     "pass --trust-code if you trust it")
    # and a conversion from it, where tf2onnx (not a rosetta runner) would load it: checked when it is opened
    one_line_refusal(*run("convert", forged, "--to", "onnx", "-o", tmp_path / "out"), "op WriteFile ")
    assert not (models.markers / "load_write").exists() and not (tmp_path / "out").exists()


def test_check_saved_model_job_in_a_worker(models):
    job = "rosetta.frameworks.tensorflow:check_saved_model_job"
    with pytest.raises(RosettaError, match=r"forged/saved_model holds op MatchingFiles \(in function "):
        run_job(job, {"path": str(models.folder / "matching_files"), "trust_code": False,
                      "label": "forged/saved_model"}, "tensorflow", "checking")
    assert run_job(job, {"path": str(models.folder / "pure"), "trust_code": False, "label": "x"},
                   "tensorflow", "checking")["checked"] is True


def test_trust_code_loads_the_model_and_runs_it(models, tmp_path):
    """With --trust-code the reader loads the SavedModel as it is: its initializer writes the marker."""
    from rosetta.sources.files import identify
    from rosetta.sources.readers import read_model_file

    read_model_file(identify(str(models.folder / "load_write")), tmp_path, [], trust_code=True)
    assert (models.markers / "load_write").read_text() == "ran when the model loaded"
    (models.markers / "load_write").unlink()


def test_rosetta_saved_models_pass(store):
    """What rosetta writes itself: onnx2tf's SavedModel of the cnn, and MMdnn's TensorFlow emitter's."""
    from rosetta.convert.targets import get_target
    from rosetta.models import get_model

    for route in ("onnx", "mmdnn"):
        target = get_target("tensorflow", route)
        folder = store.get(get_model("cnn"), 0, target.chain, target.export_options())
        result = run_job("rosetta.frameworks.tensorflow:check_saved_model_job",
                         {"path": str(folder / "saved_model"), "trust_code": False, "label": route},
                         "tensorflow", "checking")
        assert result["checked"] is True
