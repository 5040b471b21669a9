"""The whole-library sweep (issue 45): one small variant of every architecture family of timm, torchvision,
Hugging Face transformers and Keras applications, each converted to every target and verified as
`rosetta convert MODEL --to all` does (rosetta.convert on the model in memory), seeded weights, small inputs.

Writes a JSON of every row (rewritten after each model: a stopped run keeps what it measured, and --resume
runs only the models not in it) and a markdown report: PASS per target, per library and per family, and every
cell that is not a PASS grouped by cause (converter and op or pattern) with counts.

    python scripts/sweep.py --json sweep.json --markdown sweep.md [--libraries timm,torchvision]
        [--only convnext,resnet] [--limit 20] [--to all] [--jobs 2] [--executor local|ray] [--resume [--rerun-failing]]

A family is timm's model module (`timm.list_modules()`), torchvision's builder module, a transformers
model type (one that builds offline from `AutoConfig.for_model(type, <small sizes>)`), or a Keras
applications module. The variant of a family is its smallest by name (timm's `test_*` models where a family
has one). A model that cannot be built or run at a small input is listed as unbuilt, with why, and has no
cells.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # rosetta, from a checkout

LIBRARIES = ("timm", "torchvision", "transformers", "keras")
IMAGE = 64  # height and width of the image models' inputs where the model takes that size
TEXT = 8  # tokens per sequence of the text models
# a variant's name words, smallest first: the first that a family's names hold picks its variant
SIZE_WORDS = ("test", "atto", "femto", "pico", "nano", "xxs", "tiny", "t", "xs", "mini", "small", "mobile", "s", "b0",
              "050", "100", "base", "b", "medium", "m")
SMALL_VIT = {"depth": 2, "embed_dim": 64, "num_heads": 2}  # timm's ViT-like families take these
MAX_TRANSFORMER_PARAMETERS = 50_000_000  # a transformers model larger than this at the small sizes is not built
SMALL_TRANSFORMER = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 37,
                     "vocab_size": 99, "max_position_embeddings": 64, "num_key_value_heads": 2, "d_model": 32,
                     "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
                     "decoder_attention_heads": 2, "encoder_ffn_dim": 37, "decoder_ffn_dim": 37, "num_layers": 2,
                     "num_heads": 2, "d_ff": 37, "d_kv": 8, "n_embd": 32, "n_layer": 2, "n_head": 2, "n_positions": 64,
                     "embed_dim": 32, "image_size": IMAGE, "patch_size": 8, "num_channels": 3, "num_labels": 10}


@dataclass(frozen=True)
class Entry:
    """One model of the sweep: its library, family, name, and how to build it (-> model, --input specs)."""

    library: str
    family: str
    name: str
    build: Callable[[], tuple]

    @property
    def key(self) -> str:
        return f"{self.library}/{self.family}/{self.name}"


def smallest(names: list[str]) -> str:
    """The name of a family's smallest variant, by the size words its parts hold, then the shortest name."""
    def rank(name: str) -> tuple:
        parts = re.split(r"[_\-.]", name.lower())  # timm's and torchvision's names; Keras's end in the word
        word = next((i for i, w in enumerate(SIZE_WORDS)
                     if any(p == w or (p.startswith(w) and p[len(w):].isdigit()) for p in parts)
                     or (len(w) > 1 and name.lower().endswith(w))), len(SIZE_WORDS))
        return word, len(name), name
    return min(names, key=rank)


def _seeded(build: Callable, seed: int = 0):
    """The module `build()` makes, its weights drawn from a seed (set before it is built: a module draws its
    weights as it is constructed), its BatchNorm statistics made non-trivial; in eval mode. Everything drawn
    after it (the calibration batch, the check's inputs) follows from the same seed: a sweep run twice gives
    the same models and the same rows."""
    import torch

    torch.manual_seed(seed)
    module = build()
    for layer in module.modules():
        if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm) and layer.running_mean is not None:
            layer.running_mean.uniform_(-0.2, 0.2)
            layer.running_var.uniform_(0.5, 1.5)
    return module.eval()


def _untied(module, seed: int = 0):
    """`module` with each weight its library initialises to zeros where a trained checkpoint has none drawn from
    a seed instead: a mixture-of-experts router's gate and expert bias (transformers: with a zero gate every
    expert scores the same, and which k of them TopK picks is each runtime's tie-break, torch's and ONNX's
    differ), and any weight matrix of zeros (timm's Hiera zero-initialises its classifier: every output 0 for
    every input, so the verdict says nothing about the conversion). Zero biases and LayerNorm-style scales of
    one are left as they are."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            flat = parameter.detach().reshape(-1)
            if parameter.dim() >= 1 and flat.numel() > 1 and parameter.is_floating_point() \
                    and bool((flat == 0).all()) and ("gate" in name or "router" in name or "expert" in name
                                                     or parameter.dim() >= 2):
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.02)
    return module


# images BatchNorm statistics are calibrated on: with 4, the last stages (2x2 maps) gave statistics of 16 values
# per channel, and other inputs than those 4 saturated Keras' EfficientNetB0's softmax (INCONCLUSIVE again)
CALIBRATION_BATCH = 64


def _calibrated(module, batch):
    """BatchNorm's running statistics set to those of the activations `batch` gives it (each layer's mean and
    variance over one training-mode pass, momentum None: their plain average), then eval mode. Initial weights
    shrink the signal layer by layer (torchvision's GoogLeNet draws its convolutions at std 0.01), and a deep
    net's output then no longer depends on its input: every target's verdict is INCONCLUSIVE, which measures the
    seeding, not the converters. Calibrated statistics rescale each stage as a trained net's do, and are still
    not the identity, so a BatchNorm a converter drops or folds wrongly shows."""
    import torch

    layers = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
              and m.track_running_stats]
    if not layers:
        return module
    momenta = [layer.momentum for layer in layers]
    module.eval()  # only BatchNorm in training mode: dropout or drop-path active would skew what it measures
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None
        layer.train()
    with torch.no_grad():
        module(batch)
    for layer, momentum in zip(layers, momenta):
        layer.momentum = momentum
    return module.eval()


def _calibrated_keras(model, batch):
    """_calibrated for a Keras model: one training-mode call with every BatchNormalization's momentum 0, so
    that its moving statistics become the batch's, and every Dropout's rate 0 (EfficientNet's drop-connect
    active while calibrating gave statistics the inference pass does not see: logits in the hundreds, a
    saturated softmax, INCONCLUSIVE again)."""
    import keras

    every = list(model._flatten_layers())
    norms = [layer for layer in every if isinstance(layer, keras.layers.BatchNormalization)]
    if not norms:
        return model
    dropouts = [layer for layer in every if isinstance(layer, keras.layers.Dropout)]
    momenta, rates = [layer.momentum for layer in norms], [layer.rate for layer in dropouts]
    for layer in norms:
        layer.momentum = 0.0
    for layer in dropouts:
        layer.rate = 0.0
    model(batch, training=True)
    for layer, momentum in zip(norms, momenta):
        layer.momentum = momentum
    for layer, rate in zip(dropouts, rates):
        layer.rate = rate
    return model


def _image_model(factory, sizes=(IMAGE, 96, 224)):
    """(module, inputs) of an image model at the first size it runs at, its BatchNorm calibrated there."""
    import torch

    last = None
    for size in sizes:
        try:
            module = _untied(_seeded(lambda: factory(size)))
            with torch.no_grad():
                module(torch.rand(2, 3, size, size))
            module = _calibrated(module, torch.rand(CALIBRATION_BATCH, 3, size, size))
            return module, [f"x:Nx3x{size}x{size}:float32"]
        except Exception as error:  # noqa: BLE001 - a size the model does not take: the next
            last = error
    raise RuntimeError(f"no input size among {sizes} runs: {type(last).__name__}: {last}"[:300])


def timm_entries() -> list[Entry]:
    from rosetta.frameworks.torchvision import make_importable

    make_importable()
    import timm

    entries = []
    for family in sorted(timm.list_modules()):
        names = timm.list_models(module=family)
        if not names:
            continue
        tests = [n for n in names if n.startswith("test_")]
        name = smallest(tests or names)

        def build(name=name):
            def factory(size):
                for kwargs in ({"img_size": size, **SMALL_VIT}, {"img_size": size}, {}):
                    try:  # a transformer of two narrow blocks where the family takes those settings
                        return timm.create_model(name, pretrained=False, num_classes=10, **kwargs)
                    except (TypeError, ValueError, AssertionError, RuntimeError):  # settings it does not take
                        continue
                return timm.create_model(name, pretrained=False, num_classes=10)
            # and the model's own size last (CrossViT's 240: its two branches' patch grids must agree)
            own = getattr(timm.models.get_pretrained_cfg(name), "input_size", None) or (3, 224, 224)
            return _image_model(factory, tuple(dict.fromkeys((IMAGE, 96, 224, int(own[-1])))))
        entries.append(Entry("timm", family, name, build))
    return entries


def torchvision_entries() -> list[Entry]:
    from rosetta.frameworks.torchvision import make_importable

    make_importable()
    import torchvision

    families = defaultdict(list)
    for module in (torchvision.models, torchvision.models.segmentation):
        for name in torchvision.models.list_models(module=module):
            builder = torchvision.models.get_model_builder(name)
            families[builder.__module__.rsplit(".", 1)[-1]].append(name)
    entries = []
    for family, names in sorted(families.items()):
        name = smallest(names)

        def build(name=name):
            def factory(size):
                kwargs = {"image_size": size} if name.startswith("vit_") else {}
                if name.startswith(("fcn_", "deeplabv3", "lraspp")):
                    kwargs.update(weights_backbone=None, aux_loss=False) if not name.startswith("lraspp") else \
                        kwargs.update(weights_backbone=None)
                return torchvision.models.get_model(name, weights=None, num_classes=10, **kwargs)
            return _image_model(factory, (IMAGE, 96, 224) if "inception" not in name else (96, 299))
        entries.append(Entry("torchvision", family, name, build))
    return entries


def _model_builder(config) -> Callable:
    """A function that builds the base model of `config`: AutoModel's, or for a type AutoModel does not map (a
    multimodal model's text or vision tower: ALIGN's, AltCLIP's, AIMv2's) the model class its own modeling module
    declares for that configuration class, the one named ...Model (not a task head's ...For...)."""
    import importlib
    import inspect

    from transformers import AutoModel, PreTrainedModel

    try:
        AutoModel._model_mapping[type(config)]
        return lambda: AutoModel.from_config(config)
    except KeyError:
        pass
    package = type(config).__module__.rsplit(".", 1)[0]
    family = type(config).__module__.rsplit(".", 1)[-1].replace("configuration_", "modeling_")
    try:
        module = importlib.import_module(f"{package}.{family}")
    except ImportError as error:
        raise ValueError(f"no model class for {type(config).__name__}: {error}") from None
    found = [cls for name, cls in inspect.getmembers(module, inspect.isclass)
             if issubclass(cls, PreTrainedModel) and getattr(cls, "config_class", None) is type(config)
             and name.endswith("Model") and "For" not in name]
    if not found:
        raise ValueError(f"no base model class for {type(config).__name__} in {module.__name__}")
    model_class = min(found, key=lambda cls: (len(cls.__name__), cls.__name__))  # the plainest name
    return lambda: model_class(config)


def transformers_entries() -> list[Entry]:
    from rosetta.frameworks.torchvision import make_importable

    make_importable()
    from transformers import CONFIG_MAPPING

    entries = []
    for model_type in sorted(CONFIG_MAPPING.keys()):
        def build(model_type=model_type):
            import torch
            from transformers import AutoConfig, AutoModel

            config = AutoConfig.for_model(model_type)
            for key, value in SMALL_TRANSFORMER.items():
                if hasattr(config, key) and isinstance(getattr(config, key), int):
                    setattr(config, key, value)
            build_model = _model_builder(config)
            with torch.device("meta"):  # counted before it is built: a configuration that keeps sizes the sweep
                # does not set (a multimodal model's sub-configs) can be many GB (one was killed at 21 GB)
                count = sum(p.numel() for p in build_model().parameters())
            if count > MAX_TRANSFORMER_PARAMETERS:
                raise RuntimeError(f"{count / 1e6:.0f} M parameters at the sweep's sizes (its configuration keeps "
                                   f"sizes the sweep does not set), over {MAX_TRANSFORMER_PARAMETERS / 1e6:.0f} M")
            module = _untied(_seeded(build_model))
            main = getattr(module, "main_input_name", "input_ids")
            if main == "input_ids":
                inputs = [f"input_ids:Nx{TEXT}:int64:0:{config.vocab_size - 1}"]
                feed = {"input_ids": torch.randint(0, config.vocab_size, (2, TEXT))}
            elif main == "pixel_values":
                size = getattr(config, "image_size", IMAGE)
                size = size if isinstance(size, int) else IMAGE
                inputs = [f"pixel_values:Nx3x{size}x{size}:float32"]
                feed = {"pixel_values": torch.rand(2, 3, size, size)}
            else:
                raise RuntimeError(f"main input {main!r}: not a text or image model")
            with torch.no_grad():
                module(**feed)
            return module, inputs
        entries.append(Entry("transformers", model_type, model_type, build))
    return entries


def keras_entries() -> list[Entry]:
    import inspect

    import keras

    families = defaultdict(list)
    for module_name in sorted(dir(keras.applications)):
        module = getattr(keras.applications, module_name)
        if not inspect.ismodule(module):
            continue
        for name in dir(module):
            if name[:1].isupper() and callable(getattr(module, name)):
                families[module_name].append(name)
    entries, seen = [], set()
    for family, names in sorted(families.items()):
        name = smallest(names)
        if name in seen:  # keras.applications.resnet50 holds resnet's ResNet50 again
            continue
        seen.add(name)

        def build(family=family, name=name):
            keras.utils.set_random_seed(0)
            constructor = getattr(getattr(keras.applications, family), name)
            for size in (IMAGE, 96, 160):
                try:
                    model = constructor(weights=None, input_shape=(size, size, 3), classes=10)
                except ValueError:  # a minimum size above this one
                    continue
                batch = keras.random.uniform((CALIBRATION_BATCH, size, size, 3), seed=0)
                return _calibrated_keras(model, batch), None
            raise RuntimeError(f"{name}: no input size among 64, 96, 160 builds")
        entries.append(Entry("keras", family, name, build))
    return entries


CATALOGUES = {"timm": timm_entries, "torchvision": torchvision_entries, "transformers": transformers_entries,
              "keras": keras_entries}


def catalogue(libraries, only: list[str] | None = None, limit: int | None = None) -> list[Entry]:
    """The sweep's models: each library's families in order, those whose family or name holds one of `only`,
    at most `limit` in all (taken round-robin over the libraries, so a small sample holds each)."""
    per_library = []
    for library in libraries:
        entries = CATALOGUES[library]()
        if only:
            entries = [e for e in entries if any(word in e.family or word in e.name for word in only)]
        per_library.append(entries)
    interleaved = [entry for group in _round_robin(per_library) for entry in group]
    return interleaved[:limit] if limit else interleaved


def _round_robin(groups: list[list]):
    for index in range(max((len(g) for g in groups), default=0)):
        yield [group[index] for group in groups if index < len(group)]


def code_version() -> str:
    """The checkout's commit (with "+" where its tree has changes), kept in each record: a sweep resumed across
    sessions says which code measured which rows."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+" if dirty else "")


def sweep_model(entry: Entry, to: str, work: Path, jobs: int, executor: str, timeout: float | None) -> dict:
    """One model's record: its rows (target, verdict, reason) or why it was not built, and its wall time."""
    import rosetta

    record = {"library": entry.library, "family": entry.family, "model": entry.name, "rows": [], "unbuilt": "",
              "code": code_version()}
    start = time.perf_counter()
    try:
        model, inputs = entry.build()
    except Exception as error:  # noqa: BLE001 - a model this sweep cannot build at a small size: said, no cells
        record["unbuilt"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:300]
        record["seconds"] = round(time.perf_counter() - start, 1)
        return record
    try:
        conversion = rosetta.convert(model, to, inputs=inputs, output_dir=work / entry.key.replace("/", "-"),
                                     batch=2, seed=0, jobs=jobs, executor=executor, timeout=timeout, force=True)
        record["rows"] = [{"target": row.target, "verdict": row.verdict, "reason": row.reason}
                          for row in conversion.report]
    except Exception as error:  # noqa: BLE001 - the run as a whole refused (its one line): every target ERROR
        record["rows"] = [{"target": "all", "verdict": "ERROR", "reason": f"{type(error).__name__}: {error}"[:300]}]
    record["seconds"] = round(time.perf_counter() - start, 1)
    return record


def cause_of(row: dict) -> str:
    """A row's cause for grouping: its verdict and reason with names, numbers and shapes made general."""
    reason = re.sub(r"^(conversion|loading|inference|reference) failed: ", "", row["reason"] or "")
    reason = re.sub(r"'([^']*)'|\"([^\"]*)\"", lambda m: _general_name(m.group(1) or m.group(2) or ""), reason)
    reason = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", reason)
    reason = re.sub(r"\[[N\s,x?-]*\]|\((?:[N\s,x?-]|None)+\)", "[…]", reason)  # shapes and index lists
    return f"{row['verdict']}: {reason[:140]}".rstrip(": ")


def _general_name(name: str) -> str:
    """A quoted name in a reason, as a cause: an op type as it is ('Shrink'), a parameter by its last part
    ('….bias'), any other name (a layer's, a tensor's) elided."""
    if re.fullmatch(r"[A-Z][A-Za-z]+", name):
        return f"'{name}'"
    return f"'….{name.rsplit('.', 1)[-1]}'" if "." in name else "'…'"


def summary(records: list[dict]) -> dict:
    """PASS counts per target, library and family, and the non-PASS cells grouped by cause."""
    groups: dict[str, dict[str, Counter]] = {"target": defaultdict(Counter), "library": defaultdict(Counter),
                                             "family": defaultdict(Counter)}
    causes: dict[str, list[str]] = defaultdict(list)
    for record in records:
        for row in record["rows"]:
            for kind, key in (("target", row["target"]), ("library", record["library"]),
                              ("family", f"{record['library']}/{record['family']}")):
                groups[kind][key][row["verdict"]] += 1
            if row["verdict"] != "PASS":
                causes[cause_of(row)].append(f"{record['model']} -> {row['target']}")
    cells = [row["verdict"] for record in records for row in record["rows"]]
    return {"models": len(records), "unbuilt": sum(bool(r["unbuilt"]) for r in records), "cells": len(cells),
            "passed": cells.count("PASS"),
            **{kind: {key: dict(counts) for key, counts in sorted(table.items())} for kind, table in groups.items()},
            "causes": [{"cause": cause, "count": len(cells_), "cells": cells_}
                       for cause, cells_ in sorted(causes.items(), key=lambda item: (-len(item[1]), item[0]))]}


def markdown(records: list[dict], seconds: float) -> str:
    """The report: shares per target, library and family, then the causes by count."""
    total = summary(records)
    share = lambda counts: (f"{counts.get('PASS', 0)} of {sum(counts.values())} "  # noqa: E731
                            f"({100.0 * counts.get('PASS', 0) / max(1, sum(counts.values())):.0f} %)")
    lines = [f"# Sweep: {total['models']} models ({total['unbuilt']} unbuilt), {total['cells']} cells, "
             f"{total['passed']} PASS ({100.0 * total['passed'] / max(1, total['cells']):.0f} %), {seconds:.0f} s", "",
             "Measured by rosetta at " + ", ".join(f"{code} ({count} models)" for code, count in
                                                   Counter(r.get("code", "unknown") for r in records).most_common()),
             ""]
    verdicts = ("PASS", "FAIL", "CANNOT", "ERROR", "INCONCLUSIVE")
    for kind in ("target", "library", "family"):
        lines += [f"## Per {kind}", "", f"| {kind} | PASS share | " + " | ".join(verdicts) + " |",
                  "|---|---|" + "---|" * len(verdicts)]
        for key, counts in total[kind].items():
            lines.append(f"| {key} | {share(counts)} | " + " | ".join(str(counts.get(v, 0)) for v in verdicts) + " |")
        lines.append("")
    lines += ["## Cells that do not PASS, by cause", "", "| count | cause | cells |", "|---|---|---|"]
    for group in total["causes"]:
        shown = ", ".join(group["cells"][:4]) + (f" and {len(group['cells']) - 4} more" if len(group["cells"]) > 4 else "")
        lines.append(f"| {group['count']} | {group['cause'].replace('|', '/')} | {shown} |")
    unbuilt = [r for r in records if r["unbuilt"]]
    if unbuilt:
        lines += ["", "## Not built (no cells)", ""] + [f"- {r['library']}/{r['family']} {r['model']}: {r['unbuilt']}"
                                                        for r in unbuilt]
    return "\n".join(lines) + "\n"


def write(json_path: Path, markdown_path: Path, records: list[dict], seconds: float) -> None:
    from rosetta.atomic import atomic_write_json, atomic_write_text

    atomic_write_json(json_path, {"models": records, "seconds": round(seconds, 1), "summary": summary(records)})
    atomic_write_text(markdown_path, markdown(records, seconds))


def record_key(record: dict) -> str:
    """A record's model as Entry.key names it: library/family/model."""
    return f"{record['library']}/{record['family']}/{record['model']}"


def run(libraries, to: str, json_path: Path, markdown_path: Path, only=None, limit=None, resume: bool = False,
        jobs: int = 2, executor: str = "local", timeout: float | None = None, work_dir: Path | None = None,
        entries: list[Entry] | None = None, rerun_failing: bool = False) -> list[dict]:
    """Sweep `entries` (default: the catalogue of `libraries`), writing the JSON and markdown after each model;
    `resume` keeps the models already in the JSON (`rerun_failing`: but those with a cell that is not a PASS, or
    not built, run again with this checkout's code). Returns every record."""
    done, earlier, seconds = {}, {}, 0.0
    if resume and json_path.is_file():
        previous = json.loads(json_path.read_text())
        earlier = {record_key(r): r for r in previous["models"]}
        done = {key: r for key, r in earlier.items()
                if not (rerun_failing and (r["unbuilt"] or any(row["verdict"] != "PASS" for row in r["rows"])))}
        seconds = previous.get("seconds", 0.0)
    entries = entries if entries is not None else catalogue(libraries, only, limit)
    keys = {e.key for e in entries}  # earlier models outside this run's catalogue are kept: a sweep grows by runs
    # a model to run again keeps its earlier record until its new one replaces it: a stopped run loses none
    records = [earlier[e.key] for e in entries if e.key in earlier] + \
        [r for k, r in earlier.items() if k not in keys]
    with tempfile.TemporaryDirectory(prefix="rosetta-sweep-") as scratch:
        work = Path(work_dir or scratch)
        for entry in entries:
            if entry.key in done:
                continue
            start = time.perf_counter()
            record = sweep_model(entry, to, work, jobs, executor, timeout)
            seconds += time.perf_counter() - start
            records = [r for r in records if record_key(r) != entry.key] + [record]
            verdicts = " ".join(f"{r['target']}={r['verdict']}" for r in record["rows"]) or f"unbuilt: {record['unbuilt']}"
            print(f"{entry.key}: {verdicts} ({record['seconds']:.0f} s)", flush=True)
            write(json_path, markdown_path, records, seconds)
    write(json_path, markdown_path, records, seconds)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--libraries", default=",".join(LIBRARIES), help=f"comma-separated: {', '.join(LIBRARIES)}")
    parser.add_argument("--only", help="comma-separated words: only families or models whose name holds one")
    parser.add_argument("--limit", type=int, help="at most this many models (taken in turn from each library)")
    parser.add_argument("--to", default="all", help="targets, as `rosetta convert --to` takes them")
    parser.add_argument("--json", type=Path, default=Path("sweep.json"))
    parser.add_argument("--markdown", type=Path, default=Path("sweep.md"))
    parser.add_argument("--resume", action="store_true", help="keep the models already in --json, run the rest")
    parser.add_argument("--rerun-failing", action="store_true",
                        help="with --resume: run again the models with a cell that is not a PASS, or that were not "
                             "built (after a fix)")
    parser.add_argument("--jobs", type=int, default=2, help="cells at a time (local: slots)")
    parser.add_argument("--executor", default="local", choices=("local", "ray"))
    parser.add_argument("--timeout", type=float, help="seconds a worker may take per job")
    parser.add_argument("--work-dir", type=Path, help="keep the converted artifacts here")
    args = parser.parse_args()
    libraries = [name.strip() for name in args.libraries.split(",") if name.strip()]
    unknown = [name for name in libraries if name not in LIBRARIES]
    if unknown:
        parser.error(f"unknown librar{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)}; "
                     f"choose from: {', '.join(LIBRARIES)}")
    only = [word.strip() for word in args.only.split(",")] if args.only else None
    records = run(libraries, args.to, args.json, args.markdown, only, args.limit, args.resume, args.jobs,
                  args.executor, args.timeout, args.work_dir, rerun_failing=args.rerun_failing)
    print(f"{len(records)} models; wrote {args.json} and {args.markdown}")


if __name__ == "__main__":
    main()
