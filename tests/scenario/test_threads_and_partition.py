"""The `threads` and `partition` settings (issue 20, stage 5): declared once
(`config.THREADS`, `config.PARTITION`), refused before anything runs when wrong, `auto`
resolved (the cores this process may use; `config.AUTO_PARTITION`), threads capped at the
parts, the build and a scheme written in Python with one note, the partition recorded in
summary.json and the threads nowhere, and a scenario file's `partition:` the same run as
the API's `partition=`."""
import io
import json
import os

import pytest

from helpers import small_scenario, write_scenario
from rocesim import Simulation, config, run_loop
from rocesim import scenario as sc
from rocesim.cli import main
from rocesim.errors import ScenarioError
from rocesim.network import topology
from rocesim.results.run import MACHINE_KEYS
from rocesim.run_progress import RunProgress

BAD_THREADS = (0, -2, 1.5, "x", True, None, [2])
FAT_TREE = {"kind": "fat_tree", "k": 4, "link": {"rate": "100Gbps", "delay": "1us"}}


def allreduce_scenario(partition):
    """fat_tree(4) with PFC, an NCCL ring all-reduce of 512 KB on every host: its
    dependencies cross the leaf groups (a scenario mapping). Each slice rides a queue pair of
    its own (`nccl.connections: per_flow`), so it starts when its dependency is released, which
    a part learns a lookahead later (on NCCL's connections, the default, the two runs of this
    all-reduce happen to agree byte for byte)."""
    return {"seed": 7, "partition": partition, "topology": FAT_TREE, "switch": {"buffer": "1MB"},
            "nccl": {"connections": "per_flow"},
            "traffic": [{"kind": "collective", "op": "allreduce", "algorithm": "nccl_ring", "size": "512KB"}],
            "output": {"plot": False}}


def allreduce_sim(partition):
    """The same as `allreduce_scenario`, through the API."""
    sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), seed=7, switch={"buffer": "1MB"},
                     nccl={"connections": "per_flow"}, partition=partition)
    sim.add_collective("allreduce", "nccl_ring", size="512KB")
    return sim


@pytest.mark.parametrize("value", BAD_THREADS)
def test_threads_other_than_auto_or_a_whole_number_are_refused_before_anything_runs(value, monkeypatch):
    with pytest.raises(ScenarioError, match=r"expected 'auto' or a whole number >= 1, got ") as e:
        sc.build(small_scenario(threads=value))
    assert e.value.key == "threads"

    def never(*_):
        raise AssertionError("the core was built")
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    sim.add_flow(1, 0, 10_000)
    monkeypatch.setattr(Simulation, "build_core", never)
    with pytest.raises(ScenarioError, match="expected 'auto' or a whole number") as e:
        sim.run(threads=value)
    assert e.value.key == "threads"


@pytest.mark.parametrize("value", ("servers", "", None, True, 2))
def test_a_partition_other_than_the_four_levels_is_refused(value):
    with pytest.raises(ScenarioError, match="must be one of auto, none, leaves, pods") as e:
        sc.build(small_scenario(partition=value))
    assert e.value.key == "partition"
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), partition=value)
    assert e.value.key == "partition"


def test_auto_threads_are_the_cores_this_process_may_use(monkeypatch):
    assert run_loop.available_cores() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(run_loop, "MAX_THREADS", 64)
    assert run_loop.choose_threads("auto", 1000) == (len(os.sched_getaffinity(0)), None)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})
    assert run_loop.choose_threads("auto", 1000) == (3, None)
    assert run_loop.choose_threads("auto", 2) == (2, None)               # capped at the parts, silently
    assert run_loop.choose_threads("auto", 1000, python_scheme=True) == (1, None)
    monkeypatch.delattr(os, "sched_getaffinity")                         # (not Linux)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert run_loop.available_cores() == 6


@pytest.mark.parametrize("max_threads, asked, parts, python, expected", [
    (64, 1, 20, False, (1, None)),
    (64, 4, 20, False, (4, None)),
    (64, 20, 20, False, (20, None)),
    (64, 30, 20, False, (20, "30 threads asked, 20 parts: running 20")),
    (64, 4, 1, False, (1, "4 threads asked, 1 part: running 1")),
    (64, 4, 20, True, (1, "a scheme written in Python runs on 1 thread")),
    (1, 4, 20, False, (1, "built without OpenMP: running 1 thread")),
    (1, 30, 20, False, (1, "built without OpenMP: running 1 thread")),
    (1, 4, 1, False, (1, "4 threads asked, 1 part: running 1")),
    (8, 16, 20, False, (8, "this build runs at most 8 threads: running 8")),
    # more than the cores this process may use (32 here): capped there, and said
    (64, 10**6, 2000, False, (32, "1,000,000 threads asked, this process may use 32 cores: running 32")),
    (64, 40, 20, False, (20, "40 threads asked, 20 parts: running 20")),
    (64, 10**6, 1, False, (1, "1000000 threads asked, 1 part: running 1")),
])
def test_threads_are_capped_with_the_reason(monkeypatch, max_threads, asked, parts, python, expected):
    monkeypatch.setattr(run_loop, "MAX_THREADS", max_threads)
    monkeypatch.setattr(run_loop, "available_cores", lambda: 32)
    assert run_loop.choose_threads(asked, parts, python_scheme=python) == expected


def test_more_threads_than_parts_are_said_once_and_capped(capsys):
    sim = Simulation(topology.star(3, "100Gbps", "1us"), partition="leaves")       # a star: one part
    sim.add_flow(1, 0, 10_000)
    assert sim.n_parts == 1 and sim.threads_to_run(4) == (1, "4 threads asked, 1 part: running 1")
    res = sim.run(threads=4, progress=None)
    assert res.threads == 1
    assert capsys.readouterr().err == "rocesim: 4 threads asked, 1 part: running 1\n"
    for kw in (dict(threads=4, progress=False), dict(threads="auto"), dict(threads=1), {}):
        sim = Simulation(topology.star(3, "100Gbps", "1us"))
        sim.add_flow(1, 0, 10_000)
        assert sim.run(**kw).threads == 1
        assert capsys.readouterr().err == ""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="pyschemes:LineRate")
    assert sim.threads_to_run(2) == (1, "a scheme written in Python runs on 1 thread")


def test_summary_json_has_the_partition_and_the_threads_the_run_used(tmp_path):
    levels = {"none": (1, None), "leaves": (20, 1000.0), "pods": (8, 1000.0)}
    written = {}
    for level, (parts, lookahead_ns) in levels.items():
        sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), partition=level)
        sim.add_flow(0, 15, 100_000)
        assert (sim.partition_level, sim.n_parts) == (level, parts)
        res = sim.run(threads=2, progress=False)
        res.write(tmp_path / level)
        written[level] = json.loads((tmp_path / level / "summary.json").read_text())
        assert {k: written[level][k] for k in ("partition", "parts", "lookahead_ns")} == \
            {"partition": level, "parts": parts, "lookahead_ns": lookahead_ns}
        # the threads it ran on (2, one part: 1), not the number asked
        assert "threads" not in written[level]
        n = 1 if parts == 1 else 2
        assert written[level]["threads_final"] == n
        # (a window with one part to run runs on one of them: the mean counts it as one)
        assert written[level]["threads_mean"] == 1 if n == 1 else 1 < written[level]["threads_mean"] <= n
    # auto: the level config.AUTO_PARTITION names
    sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"))
    assert sim.partition_setting == "auto" and sim.partition_level == config.AUTO_PARTITION
    assert sim.n_parts == levels[config.AUTO_PARTITION][0]


def test_the_outputs_do_not_depend_on_the_threads(tmp_path):
    """A run in parts on 1, 2 and 4 threads (capped at what the build runs): the same files,
    summary.json but its timing keys included."""
    files = {}
    for n in (1, 2, 4):
        res = allreduce_sim("leaves").run(threads=n, progress=False)
        res.write(tmp_path / str(n))
        files[n] = {f: (tmp_path / str(n) / f).read_bytes() for f in sorted(os.listdir(tmp_path / str(n)))}
        summary = json.loads(files[n].pop("summary.json"))
        files[n]["summary"] = {k: v for k, v in summary.items() if k not in MACHINE_KEYS}
    assert files[1] == files[2] == files[4]


@pytest.mark.skipif(min(run_loop.MAX_THREADS, len(os.sched_getaffinity(0))) < 2, reason="one thread only here")
def test_a_window_with_one_part_to_run_runs_on_one_thread(tmp_path):
    """Traffic inside one pod at `pods`: every window has one part to run, which runs on one
    of 2 threads while the other waits (summary.json's `threads_mean` about 1, its final count
    2), and the outputs are those of one thread."""
    files = {}
    for n in (1, 2):
        sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), seed=1, partition="pods")
        for src, dst in ((0, 2), (1, 3), (2, 1), (3, 0)):      # pod 0's hosts
            sim.add_flow(src, dst, 1_000_000)
        res = sim.run(threads=n, progress=False)
        res.write(tmp_path / str(n))
        files[n] = {f: (tmp_path / str(n) / f).read_bytes() for f in sorted(os.listdir(tmp_path / str(n)))}
        files[n]["summary"] = json.loads(files[n].pop("summary.json"))
    used = files[2]["summary"]
    assert used["parts"] > 1 and used["threads_final"] == 2 and used["threads_mean"] < 1.1
    for n in (1, 2):
        files[n]["summary"] = {k: v for k, v in files[n]["summary"].items() if k not in MACHINE_KEYS}
    assert files[1] == files[2]


def test_a_scenario_in_parts_runs_as_the_api_does(tmp_path, capsys):
    """`partition: leaves` in a scenario file and `Simulation(partition="leaves")`: the same
    flows.csv, and not the one-part run's (dependencies across parts wait for the lookahead)."""
    flows = {}
    for level in ("none", "leaves"):
        path = write_scenario(tmp_path, allreduce_scenario(level), f"{level}.yaml")
        assert main(["run", path, "-o", str(tmp_path / level), "-q", "--threads", "2"]) == 0
        flows[level] = (tmp_path / level / "flows.csv").read_bytes()
        api = allreduce_sim(level).run(progress=False)
        api.write(tmp_path / f"api_{level}")
        assert (tmp_path / f"api_{level}" / "flows.csv").read_bytes() == flows[level]
    assert flows["none"] != flows["leaves"]
    capsys.readouterr()


def test_auto_runs_flow_mode_in_one_part(monkeypatch):
    """With `partition: auto` at a level that cuts, deadlock detection runs in parts, and
    flow mode (one part by nature) runs in one part instead of being refused."""
    monkeypatch.setattr(config, "AUTO_PARTITION", "leaves")
    t = topology.fat_tree(4, "100Gbps", "1us")
    assert Simulation(t).n_parts == Simulation(t, deadlock=True).n_parts == 20
    sim = Simulation(t, mode="flow")
    assert (sim.n_parts, sim.partition_level) == (1, "none")


def test_the_progress_line_shows_the_threads_when_more_than_one():
    """The threads running now, and their mean when it differs (`threads: auto`)."""
    st = dict(sim_time_ps=500_000_000, flows_done=1, events=1000)
    lines = {n: RunProgress(2, 10**9, stream=io.StringIO(), threads=n).line(st) for n in (1, 2)}
    assert " on " not in lines[1] and "/s  elapsed " in lines[1]
    assert "/s on 2 threads  elapsed " in lines[2]
    auto = RunProgress(2, 10**9, stream=io.StringIO(), threads=2)
    assert "/s on 2 threads  elapsed " in auto.line({**st, "threads_mean": 1.98, "threads_final": 2})
    assert "/s on 1 thread (1.6 on average)  elapsed " in auto.line({**st, "threads_mean": 1.6, "threads_final": 1})
