"""rosetta installs on Python 3.10-3.13: pyproject.toml admits them, the core needs no framework beyond torch and
ONNX Runtime, every other framework is an extra that rosetta/extras.py names, and a package with no wheel for a
Python carries a marker that leaves it out there. Read from the files: nothing is installed or downloaded.

Which packages have no wheel where was measured with `pip download --no-deps --only-binary=:all: --python-version
X.Y` for every pin of requirements/pins.txt and no-deps.txt: all have wheels for 3.12 and 3.13 except numpy
1.26.4 (none for 3.13), and so MXNet 1.9.1 (numpy < 2) cannot install on 3.13."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from rosetta.extras import EXTRA_OF, UNAVAILABLE

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
# pins with no wheel for a Python (measured, see above): (pin, the Pythons without one)
NO_WHEEL_PINS = {"numpy==1.26.4": ["3.13"]}


def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def extras() -> dict[str, list[Requirement]]:
    return {extra: [Requirement(text) for text in texts]
            for extra, texts in project()["optional-dependencies"].items()}


def applies(requirement: Requirement, python: str) -> bool:
    return requirement.marker is None or requirement.marker.evaluate({"python_version": python, "extra": ""})


def pins(python: str) -> dict[str, str]:
    """requirements/pins.txt as {package: its pinned specifier} on `python` (its markers evaluated)."""
    found: dict[str, str] = {}
    for line in (ROOT / "requirements" / "pins.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            requirement = Requirement(line)
            if applies(requirement, python):
                name = canonicalize_name(requirement.name)
                assert name not in found, f"{name} pinned twice for Python {python}"
                found[name] = str(requirement.specifier)
    return found


@pytest.mark.parametrize("python", PYTHONS)
def test_requires_python_admits(python):
    assert SpecifierSet(project()["requires-python"]).contains(python), project()["requires-python"]


def test_core_has_no_framework_an_extra_installs():
    core = {canonicalize_name(Requirement(text).name) for text in project()["dependencies"]}
    assert {"torch", "onnx", "onnxruntime", "numpy"} <= core
    in_extras = {canonicalize_name(r.name) for extra, reqs in extras().items() if extra not in ("test", "ray")
                 for r in reqs} - {"dl-rosetta"}
    assert not core & in_extras, f"in the core and in an extra: {sorted(core & in_extras)}"


def test_every_extra_rosetta_names_exists_and_installs_that_module():
    declared = extras()
    for module, extra in EXTRA_OF.items():
        assert extra in declared, f"rosetta/extras.py names dl-rosetta[{extra}] for {module}; pyproject has none"
        names = {canonicalize_name(r.name) for r in declared[extra]}
        expected = "tensorflow-cpu" if module == "tensorflow" else canonicalize_name(module)
        assert expected in names, f"dl-rosetta[{extra}] does not install {module} ({sorted(names)})"


def test_frameworks_extra_is_every_framework_extra():
    (everything,) = extras()["frameworks"]
    assert canonicalize_name(everything.name) == "dl-rosetta"
    wanted = set(EXTRA_OF.values()) - {"ray"}  # ray is the optional executor, installed by make on its own
    assert set(everything.extras) == wanted


@pytest.mark.parametrize("python", PYTHONS)
def test_a_package_that_cannot_install_on_a_python_has_a_marker_leaving_it_out(python):
    """mxnet on 3.13 (no numpy < 2 there): its requirement must not apply there, and must apply before."""
    version = tuple(int(part) for part in python.split("."))
    for module, (first, _) in UNAVAILABLE.items():
        requirements = [r for reqs in extras().values() for r in reqs if canonicalize_name(r.name) == module]
        assert requirements, f"{module} is in no extra"
        for requirement in requirements:
            assert applies(requirement, python) == (version < first), (
                f"{requirement} on Python {python}: it cannot install from {first[0]}.{first[1]} on")


@pytest.mark.parametrize("python", PYTHONS)
def test_pins_hold_on_every_python_with_torch_pinned(python):
    found = pins(python)
    assert found.get("torch", "").startswith("=="), "torch must stay pinned (an unpinned torch is a CUDA build)"
    assert all(spec.startswith("==") for spec in found.values()), found
    for pin, without in NO_WHEEL_PINS.items():
        name, _, version = pin.partition("==")
        pinned_here = found.get(name) == f"=={version}"
        assert pinned_here == (python not in without), f"{pin} on Python {python}: it has no wheel for {without}"
        assert name in found, f"{name} is not pinned for Python {python}"


def test_ci_python_keeps_its_pins():
    """The CI machine (3.11) installs exactly what it did: the markers change nothing there."""
    found = pins("3.11")
    assert found["numpy"] == "==1.26.4" and found["torch"] == "==2.13.0" and found["mxnet"] == "==1.9.1"
