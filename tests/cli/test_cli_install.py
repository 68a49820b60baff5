"""The README's install and commands from the clone's root; an unbuilt source folder's one-line error."""
import importlib.machinery
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rocesim
from helpers import ROOT

UNDER_TEST = Path(rocesim.__file__).resolve().parent


def python(*args, cwd):
    """`python ARGS` in `cwd`, which (for -c, -m) Python puts first on the module path."""
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def built(package: Path) -> bool:
    core = package / "_core"
    return any((core / f"engine{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES)


def readme_api_example() -> str:
    readme = (ROOT / "README.md").read_text()
    return re.search(r"## Python API\n+```python\n(.*?)```", readme, re.S).group(1)


def one_line(proc, message):
    """Exit 1, nothing on stdout, and on stderr `message` alone (the first module of the core
    that is missing shows as rocesim._core.NAME)."""
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.sub(r"rocesim\._core\.\w+", "rocesim._core.NAME", lines[0]) == message


def assert_refused(proc, clone):
    """The one line that says how to build a clone's source folder in place."""
    one_line(proc, f"rocesim: error: {clone / 'rocesim'} is a source folder without its compiled core "
                   f"(rocesim._core.NAME): run `pip install -e .` in {clone}, or run from outside it to use "
                   f"the installed rocesim")


def test_readme_commands_from_the_clone_root(tmp_path):
    """`python -m rocesim` and the API example saved in the root import the root's rocesim:
    they work once it is built in place (the README's `pip install -e .`), else say so."""
    code = readme_api_example()
    assert code.count('"out/api"') == 1
    code = code.replace('"out/api"', repr(str(tmp_path / "api")))
    check = python("-m", "rocesim", "check", "scenarios/quickstart.yaml", cwd=ROOT)
    api = python("-c", code, cwd=ROOT)
    if not built(ROOT / "rocesim"):                          # e.g. a plain `pip install .`
        assert_refused(check, ROOT)
        assert_refused(api, ROOT)
        return
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("ok: 32 hosts, 6 switches, ")
    assert api.returncode == 0, api.stderr
    assert "flows completed" in api.stdout
    assert (tmp_path / "api" / "flows.csv").is_file() and (tmp_path / "api" / "summary.json").is_file()


@pytest.fixture
def unbuilt_clone(tmp_path):
    """A copy of the rocesim under test without its compiled core, beside a setup.py."""
    clone = tmp_path / "clone"
    shutil.copytree(UNDER_TEST, clone / "rocesim",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"))
    (clone / "setup.py").write_text("")
    return clone


def test_an_unbuilt_source_folder_refuses_in_one_line(unbuilt_clone):
    (unbuilt_clone / "example.py").write_text("import rocesim\n")
    assert_refused(python("-c", "import rocesim", cwd=unbuilt_clone), unbuilt_clone)
    assert_refused(python("-m", "rocesim", "check", "scenario.yaml", cwd=unbuilt_clone), unbuilt_clone)
    assert_refused(python("example.py", cwd=unbuilt_clone), unbuilt_clone)
    caught = python("-c", "try:\n    import rocesim\nexcept ImportError as e:\n    print(type(e).__name__)",
                    cwd=unbuilt_clone)                            # a program can still catch it
    assert (caught.returncode, caught.stdout, caught.stderr) == (0, "CoreNotBuilt\n", "")


def test_an_installed_package_without_its_core_says_reinstall(unbuilt_clone):
    (unbuilt_clone / "setup.py").unlink()                     # not a clone: a broken install
    one_line(python("-c", "import rocesim", cwd=unbuilt_clone),
             f"rocesim: error: {unbuilt_clone / 'rocesim'} has no compiled core (rocesim._core.NAME): reinstall "
             f"rocesim (its build needs a C compiler and the Python headers)")
