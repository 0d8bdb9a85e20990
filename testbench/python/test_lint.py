"""flake8 (Debian's) finds nothing in the project's Python: the package (scripts/python/stepsim),
its tests (testbench/python) and the scripts (scripts/, graphs/), with the checked-in
configuration scripts/python/.flake8 (line length, the style the code keeps, per-file reasons)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CONFIG = os.path.join(ROOT, "scripts", "python", ".flake8")
TREES = ["scripts", "graphs", os.path.join("testbench", "python")]  # scripts/ holds the package


def flake8(*paths, cwd=ROOT):
    """flake8 with the project's configuration; a missing flake8 fails the test, never skips it."""
    if shutil.which("flake8") is None:
        pytest.fail("flake8 is not installed: apt-get install flake8 (scripts/setup.sh installs it)")
    return subprocess.run(["flake8", "--config", CONFIG, *paths], cwd=cwd, capture_output=True, text=True)


def test_the_projects_python_is_clean():
    p = flake8(*TREES)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), "flake8 --config %s %s:\n%s%s" % (
        os.path.relpath(CONFIG, ROOT), " ".join(TREES), p.stdout, p.stderr)


def test_the_configuration_still_finds_unused_imports_undefined_names_and_long_lines(tmp_path):
    (tmp_path / "bad.py").write_text("import os\n\n\ndef f():\n    return undefined_name\n\n\nx = '%s'\n" % ("y" * 120))
    p = flake8("bad.py", cwd=str(tmp_path))
    assert p.returncode == 1
    assert p.stdout.splitlines() == ["bad.py:1:1: F401 'os' imported but unused",
                                     "bad.py:5:12: F821 undefined name 'undefined_name'",
                                     "bad.py:8:121: E501 line too long (126 > 120 characters)"]
