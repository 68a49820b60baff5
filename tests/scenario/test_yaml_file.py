"""Scenario and input files (rocesim.scenario.yaml_file): not UTF-8, nested too deep, anchors.

Each is one ScenarioError naming the file and line, or the key (rocesim._textfile reads the
named text files)."""
import pytest
import yaml

from helpers import cli_error, scenario_error, small_scenario, write_file
from rocesim import scenario as sc
from rocesim.errors import ScenarioError

pytestmark = pytest.mark.usefixtures("no_core")     # errors come before anything runs


# --- bytes that are not UTF-8 ----------------------------------------------------------------------

def test_scenario_file_not_utf8(tmp_path, capsys):
    path = write_file(tmp_path, "s.yaml", b"seed: 1\nname: caf\xe9\n")
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    assert info.value.key == f"{path}:2"
    assert "not UTF-8 text" in info.value.reason and "byte offset 17" in info.value.reason
    err = cli_error(capsys, "check", path)
    assert f"{path}:2: not UTF-8" in err
    assert "not UTF-8" in cli_error(capsys, "run", path, "-o", str(tmp_path / "out"))


def test_scenario_file_utf16(tmp_path):
    path = write_file(tmp_path, "s.yaml", yaml.safe_dump(small_scenario()).encode("utf-16"))
    with pytest.raises(ScenarioError, match="not UTF-8 text.*UTF-16"):
        sc.load(path)


@pytest.mark.parametrize("kind", ["hpcc_file", "hpcc_flow_file", "cdf_file", "astra_sim"])
def test_named_text_files_not_utf8(kind, tmp_path, capsys):
    bad = write_file(tmp_path, "in.txt", b"1 0 1\n\xff\xfe\x00 garbage\n")
    raw = small_scenario()
    if kind == "hpcc_file":
        raw["topology"] = {"kind": "hpcc_file", "path": "in.txt"}
    elif kind == "hpcc_flow_file":
        raw["traffic"] = [{"kind": "hpcc_flow_file", "path": "in.txt"}]
    elif kind == "cdf_file":
        raw["traffic"] = [{"kind": "cdf", "distribution": {"file": "in.txt"}, "load": 0.5, "duration": "1ms"}]
    else:
        raw["traffic"] = [{"kind": "workload", "model": {"astra_sim": "in.txt"}}]
    e = scenario_error(raw, str(tmp_path))
    assert e.key == f"{bad}:2" and "not UTF-8 text" in e.reason and "0xff" in e.reason
    path = write_file(tmp_path, "s.yaml", yaml.safe_dump(raw).encode())
    assert f"{bad}:2: not UTF-8 text" in cli_error(capsys, "check", path)


# --- deep nesting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [80, 5000, 100_000])
def test_deep_yaml_file(depth, tmp_path, capsys):
    path = write_file(tmp_path, "s.yaml", ("seed: " + "[" * depth + "]" * depth + "\n").encode())
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    assert "nested" in info.value.reason and "64" in info.value.reason
    assert "nested" in cli_error(capsys, "check", path)


def test_deep_mapping_names_where():
    raw = small_scenario()
    node = raw["traffic"][0]
    for _ in range(200):
        node["x"] = {}
        node = node["x"]
    e = scenario_error(raw)
    assert e.key.startswith("traffic[0].x.x") and "nested more than 64 levels" in e.reason


def test_deep_structure_beyond_python_recursion_limit():
    raw = small_scenario()
    deep = []
    for _ in range(50_000):          # far beyond sys.getrecursionlimit(): the check is iterative
        deep = [deep]
    raw["name"] = deep
    assert "nested more than" in scenario_error(raw).reason
    with pytest.raises(ScenarioError, match="nested more than"):
        sc.apply_overrides(raw, ["seed=2"])


def test_shared_anchors_checked_once(tmp_path):
    # a billion-laughs style document: 9 levels of 10 aliases each, shared, not copied
    lines = ["a0: &a0 [1, 2]"] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    path = write_file(tmp_path, "s.yaml", ("\n".join(lines) + "\n").encode())
    with pytest.raises(ScenarioError) as info:
        sc.load(path)
    assert info.value.key == "a0" and "unknown key" in info.value.reason


def test_self_referencing_anchor(tmp_path, capsys):
    path = write_file(tmp_path, "s.yaml", b"seed: 1\nname: &a [*a]\n")
    assert "name[0]: refers to itself" in cli_error(capsys, "check", path)


def test_deep_set_override(tmp_path, capsys):
    path = write_file(tmp_path, "s.yaml", yaml.safe_dump(small_scenario()).encode())
    err = cli_error(capsys, "check", path, "--set", "name=" + "[" * 3000 + "]" * 3000)
    assert "--set name" in err and "nested" in err


def test_impossible_yaml_date(tmp_path, capsys):
    path = write_file(tmp_path, "s.yaml", b"seed: 2024-13-45\n")
    assert "not valid YAML" in cli_error(capsys, "check", path)
