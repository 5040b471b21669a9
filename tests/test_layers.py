"""rosetta's imports go one way: each module imports only from its own layer or the layers below it, and no
modules import each other in a circle. Every `import` counts, at the top of a module and inside functions,
so a lazy import cannot hide a dependency that points up."""

from __future__ import annotations

import ast
from pathlib import Path

# The layers, bottom first, each with the module prefixes it holds (a module is in the layer of its longest
# matching prefix) and why it sits there. A module may import from its own layer and the layers below.
LAYERS = [
    ("foundation", ("rosetta", "rosetta.errors", "rosetta.registry", "rosetta.imports", "rosetta.processes",
                    "rosetta.scratch", "rosetta.atomic", "rosetta.timing", "rosetta.progress", "rosetta.extras", "rosetta.version", "rosetta.settings"),
     "errors, registries, processes, scratch folders, atomically written files, the timing harness, progress "
     "bars, which extra installs each framework, rosetta's version, the run settings and tolerance objects: no "
     "model, no framework"),
    ("trust", ("rosetta.trust",), "what each model format may do without --trust-code: checks over files only"),
    ("execution", ("rosetta.execution",),
     "where a job runs (this process or a worker); jobs are named by entry, never imported"),
    ("models", ("rosetta.models",), "reference models, TensorSpec and seeded inputs: what every layer above speaks of"),
    ("artifacts", ("rosetta.manifest", "rosetta.output"), "the manifest format and atomically written folders"),
    ("frameworks", ("rosetta.frameworks",), "each framework's runner and loading code, with its safety guards"),
    ("train", ("rosetta.train",), "trainers: the frameworks' models in train mode"),
    ("native", ("rosetta.native",), "the DLF models written by hand in each framework: the baselines a converted "
                                    "model is timed against, artifacts like any conversion"),
    ("convert", ("rosetta.convert",), "conversion paths, targets, the artifact store: artifacts from artifacts"),
    ("sources", ("rosetta.sources",), "users' model files, read and converted through the layers below"),
    ("verify", ("rosetta.verify",), "verification cells, comparison and tolerance over everything below"),
    ("bench", ("rosetta.bench",), "benchmarks: may reuse verify's pieces, verify never needs bench"),
    ("report", ("rosetta.report",), "tables and charts of verify's and bench's results"),
    ("api", ("rosetta.api", "rosetta.testing"),
     "the public Python surface (verify, convert, bench, result objects) and rosetta.testing's assertion"),
    ("cli", ("rosetta.cli",), "the command line: parses arguments, calls the API, prints"),
]
# The package's one import of a layer above: `rosetta.verify` and the rest of the public surface, re-exported
# from rosetta.api on first use (rosetta/__init__.py's __getattr__), so that `import rosetta` stays light.
PUBLIC_FACE = ("rosetta", "rosetta.api")

PACKAGE = Path(__file__).resolve().parents[1] / "rosetta"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imported_modules(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The rosetta modules `name` imports anywhere in its code (relative imports resolved); a
    `from package import name` counts the package and, where it is one, the module `name`."""
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in names:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):  # its own packages: always run
                targets.add(target)
    return targets


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported_modules(name, path, known) for name, path in known.items()}


def placement(module: str) -> tuple[str, int]:
    """The longest prefix in LAYERS that holds `module`, and its layer's index."""
    return max(((prefix, index) for index, (_, prefixes, _) in enumerate(LAYERS) for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), key=lambda match: len(match[0]))


def layer_of(module: str) -> int:
    return placement(module)[1]


def test_every_module_has_a_layer():
    unplaced = [module for module in modules() if module != "rosetta" and placement(module)[0] == "rosetta"]
    assert not unplaced, "modules in no layer (add them to LAYERS): " + ", ".join(unplaced)


def test_imports_point_down():
    violations = []
    for module, targets in sorted(import_graph().items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(module) and (module, target) != PUBLIC_FACE:
                violations.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports "
                                  f"{target} ({LAYERS[layer_of(target)][0]})")
    assert not violations, f"{len(violations)} imports point up:\n" + "\n".join(violations)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph.get(node, ()):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_no_import_circles():
    circles = strongly_connected(import_graph())
    assert not circles, "modules that import each other in a circle:\n" + "\n".join(
        f"{len(c)}: {', '.join(c)}" for c in sorted(circles, key=len, reverse=True))


def climbs_to_the_public_face(name: str, path: Path, known: dict[str, Path]) -> list[str]:
    """The imports in `name` that reach the package's public face: rosetta.api (or rosetta.testing, which is
    built on it), or a name of rosetta/__init__.py that is not a module of its own, taken (`from rosetta import
    __version__`) or read after `import rosetta` (`rosetta.verify(...)`)."""
    climbs = []
    tree = ast.parse(path.read_text(), str(path))
    # `import rosetta` for the package's own file (rosetta.__file__) is no climb; rosetta.verify(...) would be
    face = sorted({f"rosetta.{node.attr}" for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                   and isinstance(node.value, ast.Name) and node.value.id == "rosetta"
                   and node.attr not in ("__file__", "__path__", "__name__")
                   and (f"rosetta.{node.attr}" not in known or node.attr in ("api", "testing"))})
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            climbs += [alias.name for alias in node.names if alias.name.startswith(("rosetta.api", "rosetta.testing"))]
            climbs += face if any(alias.name == "rosetta" and not alias.asname for alias in node.names) else []
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.startswith(("rosetta.api", "rosetta.testing")):
                climbs.append(node.module)
            elif node.module == "rosetta":
                climbs += [f"rosetta.{alias.name}" for alias in node.names if f"rosetta.{alias.name}" not in known
                           or alias.name in ("api", "testing")]
    return climbs


def test_nothing_below_the_public_face_climbs_to_it():
    """Only the API, rosetta.testing and cli/ may reach rosetta/__init__.py's names or rosetta.api: a layer below
    that did would import the public face it serves (rosetta's version lives in rosetta.version for this)."""
    known, api_layer = modules(), [name for name, _, _ in LAYERS].index("api")
    climbs = sorted(f"{module} imports {target}" for module, path in known.items()
                    if module != "rosetta" and layer_of(module) < api_layer
                    for target in climbs_to_the_public_face(module, path, known))
    assert not climbs, f"{len(climbs)} imports climb to the public face:\n" + "\n".join(climbs)


def test_the_climb_check_sees_a_climb(tmp_path):
    known = {"rosetta.errors": Path("errors.py"), "rosetta.version": Path("version.py")}
    module = tmp_path / "m.py"
    module.write_text("from rosetta import errors, version\nfrom rosetta.version import __version__\n"
                      "def f():\n    from rosetta import __version__\n    import rosetta.api\n"
                      "def g():\n    import rosetta\n    return rosetta.__file__, rosetta.errors, rosetta.verify\n")
    assert climbs_to_the_public_face("rosetta.m", module, known) == ["rosetta.__version__", "rosetta.api",
                                                                      "rosetta.verify"]


def test_the_checks_see_a_violation_and_a_circle():
    assert layer_of("rosetta.frameworks.keras") < layer_of("rosetta.sources.keras")
    assert layer_of("rosetta.verify") < layer_of("rosetta.bench") < layer_of("rosetta.report")
    assert layer_of("rosetta.models.inputs") == layer_of("rosetta.models")
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_command_line_reaches_the_library_through_the_api_only():
    """cli/ parses, calls rosetta.api and prints: no verdict logic, no framework, nothing of the layers between."""
    foundation = LAYERS[0][1]
    graph = import_graph()
    reaches = sorted(f"{module} imports {target}" for module, targets in graph.items() if module.startswith("rosetta.cli")
                     for target in targets if not target.startswith(("rosetta.cli", "rosetta.api"))
                     and placement(target)[0] not in foundation)
    assert not reaches, "the command line must go through rosetta.api:\n" + "\n".join(reaches)


# The framework packages: only rosetta's lower floors import them (frameworks/ runs them; train/ and native/
# hold one module per framework; convert/ bridges into them).
FRAMEWORK_PACKAGES = ("torch", "torchvision", "tensorflow", "keras", "tf_keras", "keras_hub", "mxnet", "onnxruntime",
                      "onnx2tf", "tf2onnx", "onnx2torch", "transformers", "timm", "jax")
# The layers that ask rosetta.frameworks (its registry's "module:function" entries, or its modules' functions)
# instead of importing a framework.
FRAMEWORK_FREE_LAYERS = ("sources", "verify", "bench", "report", "api", "cli")
# What still imports a framework above frameworks/, each with its reason; an entry goes when its module moves.
FRAMEWORK_IMPORTS_ALLOWED: dict[str, str] = {}  # none left: a port's PyTorch side trains in rosetta/train/port_torch.py


def framework_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of a framework package in `path`, at the top of the module or inside a
    function; rosetta's own modules named after a framework (rosetta.frameworks.torch) are not one."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        found += [(node.lineno, name) for name in names if name.split(".")[0] in FRAMEWORK_PACKAGES]
    return sorted(found)


def test_no_framework_is_imported_above_frameworks():
    """sources/, verify/, bench/, report/, the API and cli/ import no framework package anywhere in their code: what
    they need of a framework is an entry of its row in rosetta.frameworks.FRAMEWORKS (a runner, a trainer, its
    layer tracing, its float64 check, its reader, its in-memory kinds, its data-parallel worker) or a function of
    a module in frameworks/ or train/, so that a framework is added in one place and a missing one breaks only
    itself. Out of scope, by design: convert/ (a converter is a bridge into its target's library, onnx2tf,
    tf2onnx, onnx2torch, MXNet's importer: it registers into that library's own tables and cannot do so without
    importing it), train/ and native/ (one module per framework, each its framework's training step or its
    hand-written model, as frameworks/ holds one runner per framework), and models/ (the reference models are
    PyTorch modules by design: the reference every other framework is compared with)."""
    layers = [name for name, _, _ in LAYERS]
    free = {layers.index(layer) for layer in FRAMEWORK_FREE_LAYERS}
    found = sorted(f"{module}:{line} imports {name}" for module, path in modules().items()
                   if module != "rosetta" and layer_of(module) in free
                   for line, name in framework_imports(path)
                   if name.split(".")[0] not in FRAMEWORK_IMPORTS_ALLOWED.get(module, "").split(","))
    assert not found, (f"{len(found)} framework imports above frameworks/ (move the code into rosetta/frameworks/ "
                       "or rosetta/train/ and call it from there):\n" + "\n".join(found))


def test_the_framework_check_sees_an_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import numpy as np\nimport torch.nn as nn\nfrom rosetta.frameworks import torch\n"
                      "from rosetta.frameworks.keras import import_keras\nfrom . import mxnet\n"
                      "def f():\n    from keras import layers\n    import onnx, onnxruntime\n"
                      "    from tf_keras.src import engine\n")
    assert framework_imports(module) == [(2, "torch.nn"), (7, "keras"), (8, "onnxruntime"), (9, "tf_keras.src")]
    assert layer_of("rosetta.sources.memory") > layer_of("rosetta.frameworks.torch_sources")
    assert {name for name, _, _ in LAYERS} >= set(FRAMEWORK_FREE_LAYERS)
