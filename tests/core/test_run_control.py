"""The run loop returns to Python in slices: progress, stop time, Ctrl-C keeps results."""
import io
import re
import subprocess
import sys

import numpy as np

import rocesim.simulation as simulation
from helpers import TINY, interrupt_on_slice, same_rocesim_env
from rocesim import Simulation, run_progress, topology
from rocesim import scenario as sc


def incast_sim():
    sim = Simulation(topology.star(9, "100Gbps", "1us"))
    for h in range(1, 9):
        sim.add_flow(h, 0, 1_000_000, start=h * 200_000_000)    # one every 200 us, 88 us each
    return sim


def test_ctrl_c_between_slices_keeps_partial_results(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(simulation.RunProgress, "update", interrupt_on_slice(3, calls))
    res = incast_sim().run(progress=True, events_per_slice=5_000)
    s = res.summary
    assert s["interrupted"]
    assert calls == sorted(calls) and len(calls) == 3 and calls[-1] <= 15_000   # 3 slices of <= 5000 events
    assert 0 < s["flows_completed"] < 8
    done = ~np.isnan(res.flows["fct_ns"])
    assert (res.flows["slowdown"][done] >= 1.0).all()
    res.write(tmp_path)                                            # partial results are writable
    assert (tmp_path / "flows.csv").read_text().count("\n") == 9


def test_stop_time_ends_the_run_and_is_reported():
    res = incast_sim().run(stop="350us")
    assert res.summary["stopped_at_limit"]
    assert res.summary["sim_time_ns"] == 350_000
    assert res.summary["flows_completed"] == 1           # the first flow only (200 us to 288 us)


def test_slices_do_not_change_the_result():
    whole = incast_sim().run(slice="1s")
    for kw in ({"events_per_slice": 777}, {"slice": "3us"}, {"slice": "7ns", "sample_interval": "5us"}):
        sliced = incast_sim().run(**kw)
        np.testing.assert_array_equal(whole.flows["fct_ns"], sliced.flows["fct_ns"])
        assert whole.summary["events"] == sliced.summary["events"]


def test_simulated_time_slices_move_the_progress_line(monkeypatch):
    def count(slice_):
        seen = []
        monkeypatch.setattr(simulation.RunProgress, "update", lambda progress, st: seen.append(st["sim_time_ps"]))
        incast_sim().run(progress=True, slice=slice_)
        return seen
    fine, coarse = count("20us"), count("1s")
    assert len(coarse) == 1
    assert len(fine) >= 8 * 88 // 20                      # each 88 us flow spans several slices
    assert fine == sorted(fine)


def test_times_and_sizes_beyond_the_time_horizon_are_refused_with_the_largest_value(tmp_path):
    """int64 picoseconds overflow past 9.2e18: a start of 9223372s used to run to a
    negative simulated time and exit 0, and a 1.2e17 B flow overflowed its ideal FCT."""
    import pytest

    from rocesim import scenario
    from rocesim.errors import ScenarioError
    from rocesim.units import MAX_TIME_PS
    raw = {"topology": {"kind": "star", "hosts": 3, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [{"kind": "flows", "flows": [{"src": 1, "dst": 0, "size": "1MB", "start": "9223372s"}]}]}
    with pytest.raises(ScenarioError) as e:
        scenario.build(raw)
    assert e.value.key == "traffic[0].flows[0].start" and "at most 1000000s" in str(e.value)
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    with pytest.raises(ScenarioError) as e:
        sim.add_flow(1, 0, int(1.2e17))
    assert e.value.key == "flows[0].size" and "at most 11400TB" in str(e.value)
    with pytest.raises(ScenarioError) as e:                   # a rate cap lowers the bound
        sim.add_flow(1, 0, "1GB", rate="1Kbps")
    assert "at most 114MB" in str(e.value)
    assert sim.n_nodes == 0                                    # nothing half-added
    sim.add_flow(1, 0, "11400TB")                              # the largest is accepted
    with pytest.raises(ScenarioError):
        sim.add_compute(1, MAX_TIME_PS + 1)


def test_a_run_ends_at_the_time_horizon_at_the_latest():
    """Each time is within the horizon, but a chain of them is not: the run stops at the
    horizon, its clock never wraps."""
    from rocesim.units import MAX_TIME_PS
    sim = Simulation(topology.star(3, "100Gbps", "1us"))
    a = sim.add_compute(1, MAX_TIME_PS // 2)
    b = sim.add_compute(1, MAX_TIME_PS // 2, after=[a])
    sim.add_compute(1, MAX_TIME_PS // 2, after=[b])
    s = sim.run().summary
    assert s["stopped_at_limit"] and s["sim_time_ns"] == MAX_TIME_PS / 1000
    assert s["flows_completed"] == 2


def test_a_slice_without_events_is_refused():
    """events_per_slice <= 0 would return from every slice having done nothing, for ever:
    refused before the run, naming the argument.  (In a subprocess with a time limit, so a
    regression fails instead of hanging the suite.)"""
    code = (
        "from rocesim import ScenarioError, Simulation, topology\n"
        "sim = Simulation(topology.star(2, '100Gbps', '1us'))\n"
        "sim.add_flow(0, 1, 10_000)\n"
        "for bad in (0, -5, 2.5, True):\n"
        "    try:\n"
        "        sim.run(events_per_slice=bad)\n"
        "        print('ran', bad)\n"
        "    except ScenarioError as e:\n"
        "        print(e.key, '|', e.reason)\n"
        "print(sim.run(events_per_slice=1).summary['flows_completed'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=same_rocesim_env())
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stderr
    assert len(lines) == 5 and lines[-1] == "1"              # one event a slice still finishes
    assert all(line.startswith("events_per_slice | must be a positive whole number") for line in lines[:4])


def test_progress_shows_time_in_units_that_do_not_round_to_1000():
    """A time just under a unit boundary (999.9999 us) is written in the next unit: the line
    of a run stopped at 1 ms reads `sim 1ms of 1ms`, never `1e+03us`."""
    assert [run_progress.short_time(ps) for ps in (999_999_999, 999_000_000, 10**9, 59_999_999_999_999)] == \
        ["1ms", "999us", "1ms", "60s"]
    assert [run_progress.short_number(x) for x in (999_999, 999_499, 2.5e9)] == \
        ["1M", "999K", "2.5G"]
    line = run_progress.RunProgress(2, 10**9, stream=io.StringIO())
    text = line.line(dict(sim_time_ps=999_999_999, flows_done=1, events=999_999))
    assert text.startswith("[rocesim] sim 1ms of 1ms (100%)  flows 1/2  1M events")


def test_single_run_progress_is_plain_lines_off_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(run_progress, "OFF_TTY_INTERVAL_S", 0.0)     # a line per slice
    scn = sc.build(sc.parse_yaml(TINY.replace("100KB", "2MB"), "t") | {"stop": "300us"})
    scn.sim.run(scn.stop, progress=True, slice="50us")
    err = capsys.readouterr().err                                   # pytest's stderr is no terminal
    assert "\r" not in err
    lines = err.strip().splitlines()
    assert len(lines) >= 4
    assert all(re.fullmatch(r"\[rocesim\] sim \S+ of 300us \(\d+%\)  flows \d+/3  \S+ events at \S+/s  "
                            r"elapsed \d+s", line) for line in lines), lines
    assert lines[-1].startswith("[rocesim] sim 300us of 300us (100%)")


def test_short_numbers():
    assert [run_progress.short_number(x) for x in (950, 12_345, 3_400_000, 2.5e9)] == ["950", "12.3K", "3.4M", "2.5G"]
    assert [run_progress.short_time(ps) for ps in (12_000, 450_000_000, 1_234_567_890, 10**12)] == \
        ["12ns", "450us", "1.23ms", "1s"]
