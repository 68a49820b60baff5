"""Workload formats are one table (rocesim.scenario.workload_formats.FORMATS): a format
registered from outside the package, a reader and one entry, runs through a YAML workload
entry, and the table's options check refuses what it does not take."""
import numpy as np
import pytest

from helpers import LINK, scenario_error
from rocesim import scenario as sc
from rocesim.scenario.workload_formats import FORMATS, WorkloadFormat
from rocesim.training.workloads import Comm, Layer, Workload
from rocesim.units import parse_size


def read_one_allreduce(path) -> Workload:
    """A toy format: a one-line text file `allreduce SIZE`, one all-reduce of SIZE bytes per
    iteration, preceded by 10 us of compute."""
    with open(path) as f:
        op, size = f.read().split()
    return Workload("one_allreduce", "DATA", [Layer("step", wg_ps=10**7, wg_comm=Comm(op, parse_size(size, path)))])


def build_one_allreduce(path, options, job):
    return job.layers(read_one_allreduce(job.path(path)), **options)


@pytest.fixture
def toy_format(monkeypatch):
    monkeypatch.setitem(FORMATS, "one_allreduce",
                        WorkloadFormat("one-all-reduce files", build_one_allreduce, {"fold_dp": None},
                                       key="one_allreduce"))


def scenario(tmp_path, **entry):
    (tmp_path / "step.txt").write_text("allreduce 400KB\n")
    return {"topology": {"kind": "star", "hosts": 4, "link": dict(LINK)},
            "traffic": [{"kind": "workload", "model": {"one_allreduce": "step.txt"}, "iterations": 3, **entry}]}


def test_a_format_registered_from_outside_runs_from_yaml(tmp_path, toy_format):
    res = sc.build(scenario(tmp_path, job="toy", algorithms={"allreduce": "ring"}), str(tmp_path)).sim.run()
    assert res.iterations["iteration"].tolist() == [0, 1, 2]
    assert res.iterations["job"].tolist() == ["toy"] * 3
    assert res.collectives["size_bytes"].tolist() == [400_000] * 3
    assert res.collectives["algorithm"].tolist() == ["ring"] * 3
    # each iteration's all-reduce starts after its compute, and after the previous iteration's
    start, finish = res.collectives["start_ns"], res.collectives["finish_ns"]
    assert start[0] >= 10_000 and np.all(start[1:] > finish[:-1])


def test_the_table_says_which_formats_take_an_option(tmp_path, toy_format):
    """An option the format does not take is refused, naming the formats that take it;
    one it takes (fold_dp, declared by its entry) passes through to its builder."""
    e = scenario_error(scenario(tmp_path, dependencies="simai"), tmp_path)
    assert e.key == "traffic[0].dependencies" and e.reason == "only ASTRA-sim files and SimAI files take it"
    e = scenario_error(scenario(tmp_path, fold_dp=3), tmp_path)          # the generator's own check
    assert e.key == "traffic[0].fold_dp" and "dividing dp=4, got 3" in e.reason
    e = scenario_error(scenario(tmp_path, fold_tp=True), tmp_path)
    assert e.key == "traffic[0].fold_tp" and "SimAI files" in e.reason and "one-all-reduce" not in e.reason
    e = scenario_error(scenario(tmp_path, model={"one_allreduce": "step.txt", "simai": "x"}), tmp_path)
    assert e.key == "traffic[0].model" and "{one_allreduce: file}" in e.reason


def test_builtin_formats_refuse_the_options_of_others(tmp_path):
    e = scenario_error(scenario(tmp_path, model="resnet50", pipeline="1f1b"), tmp_path)
    assert e.key == "traffic[0].pipeline" and e.reason == "only the LLM presets and SimAI files take it"
    e = scenario_error(scenario(tmp_path, model="resnet50", clock="2GHz"), tmp_path)
    assert e.key == "traffic[0].clock" and e.reason == "only ASTRA-sim files and SimAI files take it"
    e = scenario_error(scenario(tmp_path, model={"chakra": "t"}, params={"layers": 2}), tmp_path)
    assert e.key == "traffic[0].params" and e.reason == "only layer models and the LLM presets take it"
