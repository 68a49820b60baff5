"""Scenarios mutated at random (hypothesis) raise nothing but ScenarioError, before the core starts."""
import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import LINK, ROOT, small_scenario
from rocesim import scenario as sc
from rocesim.errors import ScenarioError

pytestmark = pytest.mark.usefixtures("no_core")     # errors come before anything runs


def _quickstart():
    raw = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    raw["traffic"][0]["duration"] = "20us"          # keep each example cheap
    return raw


def _collectives():
    return small_scenario(topology={"kind": "leaf_spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4, "link": LINK},
                          traffic=[{"kind": "collective", "op": "allreduce", "algorithm": "ring", "ranks": "all",
                                    "size": "64KB", "chunks": 2},
                                   {"kind": "permutation", "size": "10KB"},
                                   {"kind": "flows", "flows": [{"src": 0, "dst": 5, "size": "1KB", "prio": 3,
                                                                "path": [0, 8, 10, 9, 5]}]},
                                   {"kind": "workload", "model": "resnet50", "ranks": [0, 1, 2, 3],
                                    "params": {"batch_time_us": 100}}],
                          cc={"scheme": "dcqcn", "params": {"window": "bdp"}},
                          routes=[{"switch": 8, "dst": 0, "next": 0}],
                          output={"sample_interval": "10us", "queue_ports": [0, 1]})


SEEDS = [small_scenario(), _quickstart(), _collectives(),
         small_scenario(topology={"kind": "fat_tree", "k": 4, "link": LINK}, stop="1ms", name="ft"),
         small_scenario(topology={"kind": "dumbbell", "hosts_left": 2, "hosts_right": 2, "link": LINK,
                                  "bottleneck": {"rate": "40Gbps", "delay": "2us"}},
                        switch={"buffer": "8MB", "pfc": {"enabled": False}, "ecn": {"enabled": True, "kmin": "10KB"}},
                        nic={"payload": "1000B", "ack_every": 2}),
         small_scenario(topology={"kind": "clos3", "tors": 4, "aggs_per_pod": 2, "tors_per_pod": 2, "cores": 2,
                                  "hosts_per_tor": 2, "host_link": LINK, "fabric_link": LINK},
                        traffic=[{"kind": "cdf", "distribution": "fb_hadoop", "load": 0.3, "duration": "5us",
                                  "hosts": [0, 1, 2, 3]},
                                 {"kind": "incast", "senders": 2, "size": "1KB", "load": 0.1, "duration": "5us"}])]


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70), st.sampled_from([0, -1, 1, 2, 7, 10**9, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "all", "1MB", "-1MB", "1 parsec", "100Gbps", "1us", "1e999s", "0.5", "websearch",
                     "ring", "star", "none", "résumé", "µs", "1µs", "\u00e9\u4e2d", "1e30GB", "NaN",
                     "nan us", "inf", "a/b.txt", "x:y", "os:path", "rocesim.errors:ScenarioError",
                     "\x00", "../../etc/passwd", "auto"]),
    st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


def _paths(node, prefix=()):
    """Every (path, value) in a nested mapping/list."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


@st.composite
def mutated(draw):
    raw = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        paths = [p for p, _ in _paths(raw)]
        path = draw(st.sampled_from(paths))
        parent = raw
        for step in path[:-1]:
            parent = parent[step]
        target = parent[path[-1]] if path else raw
        action = draw(st.sampled_from(["replace"] * 4 + ["scalar"] * 4 + ["delete", "add", "nest"]))
        if not path:
            if action == "add":
                raw[draw(st.text(max_size=6))] = draw(values)
            continue
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "scalar":
            parent[path[-1]] = draw(scalars)
        elif action == "delete":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif action == "add" and isinstance(target, dict):
            target[draw(st.sampled_from(["kind", "bogus", "path", "size", "limits", "é", "1"]))] = draw(values)
        elif action == "add" and isinstance(target, list):
            target.append(draw(values))
        elif action == "nest":
            wrapped = target
            for _ in range(draw(st.sampled_from([1, 1, 2, 2, 3, 70]))):
                wrapped = [wrapped] if draw(st.booleans()) else {"x": wrapped}
            parent[path[-1]] = wrapped
    return raw


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture])
@given(mutated())
def test_mutated_scenarios_raise_only_scenario_error(raw):
    try:
        sc.build(raw, str(ROOT / "scenarios"))
    except ScenarioError as e:
        assert isinstance(e.key, str) and e.reason
