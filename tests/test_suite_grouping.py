"""`make test` relies on pytest-xdist's `--dist loadgroup`: the tests of a module-scoped fixture, and those marked
`xdist_group` (the zoo's, the SavedModel attacks'), run in one test process. pytest 9.2 with xdist 3.8 silently
stopped grouping (pytest-dev/pytest-xdist#1386: the suffix xdist writes to the node id is no longer read), so each
such fixture was computed in both processes; this runs a small suite of its own under two processes and checks
that each group ran in one of them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

FIXTURE_MODULE = """
import os, pytest
@pytest.fixture(scope="module")
def made():
    with open(os.environ["LOG"], "a") as log:
        log.write("fixture " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
@pytest.mark.parametrize("i", range(6))
def test_uses_it(made, i):
    pass
"""
MARKED_MODULE = """
import os, pytest
pytestmark = pytest.mark.xdist_group("marked")
@pytest.mark.parametrize("i", range(6))
def test_marked(i):
    with open(os.environ["LOG"], "a") as log:
        log.write("marked " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""
FREE_MODULE = """
import pytest
@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
"""


def test_module_fixtures_and_marked_groups_run_in_one_process(tmp_path):
    shutil.copy(Path(__file__).with_name("conftest.py"), tmp_path / "conftest.py")
    shutil.copy(Path(__file__).with_name("shared.py"), tmp_path / "shared.py")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    shutil.move(tmp_path / "shared.py", tmp_path / "tests" / "shared.py")
    for name, text in (("test_fixture.py", FIXTURE_MODULE), ("test_marked.py", MARKED_MODULE),
                       ("test_free.py", FREE_MODULE)):
        (tmp_path / name).write_text(text)
    log = tmp_path / "log"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p",
                           "no:cacheprovider", "test_fixture.py", "test_marked.py", "test_free.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "LOG": str(log), "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    lines = log.read_text().split()
    fixture = [lines[i + 1] for i in range(0, len(lines), 2) if lines[i] == "fixture"]
    marked = {lines[i + 1] for i in range(0, len(lines), 2) if lines[i] == "marked"}
    assert len(fixture) == 1, f"the module-scoped fixture ran in {fixture}: xdist's loadgroup did not group"
    assert len(marked) == 1, f"the xdist_group ran in {sorted(marked)}: xdist's loadgroup did not group"
