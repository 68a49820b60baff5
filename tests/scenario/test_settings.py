"""Declared settings (rocesim.settings): a wrong name or preset parameter is one error naming its key."""
import pytest
import yaml

from helpers import LINK, cli_error, scenario_error, small_scenario, write_file

pytestmark = pytest.mark.usefixtures("no_core")     # errors come before anything runs


NAME_SLOTS = [
    ("topology.kind", lambda r, v: r["topology"].__setitem__("kind", v)),
    ("traffic[0].kind", lambda r, v: r["traffic"][0].__setitem__("kind", v)),
    ("traffic[0].op", lambda r, v: r.__setitem__("traffic", [{"kind": "collective", "op": v, "size": "1MB"}])),
    ("traffic[0].algorithm", lambda r, v: r.__setitem__(
        "traffic", [{"kind": "collective", "op": "allreduce", "algorithm": v, "size": "1MB"}])),
    ("traffic[0].distribution", lambda r, v: r.__setitem__(
        "traffic", [{"kind": "cdf", "distribution": v, "load": 0.5, "duration": "10us"}])),
    ("traffic[0].model", lambda r, v: r.__setitem__("traffic", [{"kind": "workload", "model": v}])),
    ("traffic[0].algorithms.allreduce", lambda r, v: r.__setitem__(
        "traffic", [{"kind": "workload", "model": "resnet50", "algorithms": {"allreduce": v}}])),
    ("traffic[0].senders", lambda r, v: r["traffic"][0].__setitem__("senders", v)),
    ("cc.scheme", lambda r, v: r.__setitem__("cc", {"scheme": v})),
    ("output.flows_format", lambda r, v: r.__setitem__("output", {"flows_format": v})),
]


@pytest.mark.parametrize("value", [{"a": 1}, ["star"], [], {}, None, 3, 1.5, True])
@pytest.mark.parametrize("key, put", NAME_SLOTS, ids=[k for k, _ in NAME_SLOTS])
def test_wrong_type_for_a_name(key, put, value):
    if value is None and key == "traffic[0].algorithm":
        return           # null leaves an optional setting at its default (the op's algorithm)
    raw = small_scenario()
    put(raw, value)
    e = scenario_error(raw)
    assert e.key.startswith(key), (e.key, key)


def test_name_error_lists_choices(tmp_path, capsys):
    raw = small_scenario(topology={"kind": {"star": 1}, "hosts": 4, "link": LINK})
    path = write_file(tmp_path, "s.yaml", yaml.safe_dump(raw).encode())
    err = cli_error(capsys, "check", path)
    assert err.startswith("rocesim: error: topology.kind: expected a topology name, got dict")
    assert "valid kinds: star, dumbbell" in err


@pytest.mark.parametrize("value", [2**63, -1, 0, True, "fast", [1], float("inf")])
def test_preset_params_checked(value):
    raw = small_scenario(traffic=[{"kind": "workload", "model": "resnet50", "params": {"batch_time_us": value}}])
    assert scenario_error(raw).key == "traffic[0].params.batch_time_us"
