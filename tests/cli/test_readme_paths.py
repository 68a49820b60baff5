"""Every path the README names (images, links, backticked paths) exists and is not git-ignored."""
import os
import re
import subprocess

import pytest

from helpers import ROOT

TOP = ("rocesim/", "scenarios/", "sweeps/", "plots/", "docs/", "tests/", "benchmarks/", "validation/",
       "examples/", ".ci/")


def _readme_paths():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    paths = set(re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text))                    # images and links
    paths = {p for p in paths if not re.match(r"[a-z]+://", p) and not p.startswith("#")}
    for token in re.findall(r"`([^`\n]+)`", text):                                  # `path` and commands
        for word in re.split(r"[\s,;()]+", token):
            word = word.rstrip(".:")
            if word.startswith(TOP) and not any(c in word for c in "<>*{}$"):
                paths.add(word)
    return sorted(paths)


def test_readme_names_paths():
    paths = _readme_paths()
    assert "docs/gallery/p99_vs_load.png" in paths and "sweeps/hpcc_paper.yaml" in paths
    assert any(p.endswith(".png") for p in paths)


@pytest.mark.parametrize("path", _readme_paths())
def test_every_path_the_readme_names_exists(path):
    assert os.path.exists(os.path.join(ROOT, path)), f"README names {path}, which does not exist"


def test_no_readme_path_is_ignored_by_git():
    paths = [p for p in _readme_paths() if os.path.exists(os.path.join(ROOT, p))]
    try:
        res = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        pytest.skip("git is not available")
    if res.returncode == 128:
        pytest.skip("not a git checkout")
    assert res.stdout.split() == [], "README paths hidden by .gitignore"


def _readme_top_commands():
    """The README's first two commands: install and quickstart, install and test."""
    with open(os.path.join(ROOT, "README.md")) as f:
        blocks = re.findall(r"```bash\n(.*?)\n```", f.read(), re.S)
    return blocks[0], blocks[1]


def test_ci_runs_the_readme_test_command_and_both_install_alike():
    quickstart, tests = _readme_top_commands()
    with open(os.path.join(ROOT, ".ci", "run")) as f:
        assert tests in f.read().splitlines()
    # the tests check the commands run from the clone's root against the install they run on:
    # the quickstart's must be the same kind (editable, so that those commands work after it)
    assert quickstart.startswith("pip install -e . && ") and tests.startswith("pip install -e \".[test]\" && ")
