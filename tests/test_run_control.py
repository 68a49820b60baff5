"""The run loop returns to Python in slices: progress, stop time, Ctrl-C keeps results."""
import numpy as np

import rocesim.simulation as simulation
from rocesim import Simulation, topology


def incast_sim():
    sim = Simulation(topology.star(9, "100Gbps", "1us"))
    for h in range(1, 9):
        sim.add_flow(h, 0, 1_000_000, start=h * 200_000_000)    # one every 200 us, 88 us each
    return sim


def test_ctrl_c_between_slices_keeps_partial_results(monkeypatch, tmp_path):
    calls = []

    def interrupt_on_third_slice(progress, st):
        calls.append(st["events"])
        if len(calls) == 3:
            raise KeyboardInterrupt

    monkeypatch.setattr(simulation.RunProgress, "update", interrupt_on_third_slice)
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
