"""validation/parallel_model.py (issue 20, stage 6): the scheduling closed forms and the fit
recovering known constants from synthetic runs; no timing."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("parallel_model", ROOT / "validation" / "parallel_model.py")
pm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pm)


def test_makespan_one_thread_is_the_sum_and_enough_threads_the_largest():
    rng = np.random.default_rng(1)
    costs = rng.random((5, 9))
    assert np.allclose(pm.makespan(costs, 1), costs.sum(axis=1))
    assert np.allclose(pm.makespan(costs, 9), costs.max(axis=1))
    assert np.allclose(pm.makespan(costs, 50), costs.max(axis=1))
    for n in (2, 3, 4):     # list scheduling: at least the largest part and the mean load,
        span = pm.makespan(costs, n)   # at most the mean load plus the largest part (Graham)
        assert np.all(span >= np.maximum(costs.max(axis=1), costs.sum(axis=1) / n) - 1e-12)
        assert np.all(span <= costs.sum(axis=1) / n + costs.max(axis=1) + 1e-12)


def test_makespan_lpt_known_cases():
    # Graham's case: LPT gives 3+2+2 = 7 where 6 is best (3+3, 2+2+2)
    assert pm.makespan([3, 3, 2, 2, 2], 2)[0] == 7
    # the claim order matters: 1, 1 then 2 on two threads ends at 3, costliest first at 2
    assert pm.makespan([1, 1, 2], 2)[0] == 3
    assert pm.makespan([2, 1, 1], 2)[0] == 2
    # zeros (padding) change nothing
    assert pm.makespan([[5, 4, 3, 0, 0], [1, 0, 0, 0, 0]], 2).tolist() == [7, 1]


def test_claim_orders_of_a_profile():
    window = np.array([0, 0, 0, 1, 1])
    events = np.array([1, 5, 3, 2, 9])
    assert pm.lpt_rank(window, events).tolist() == [2, 0, 1, 1, 0]
    # the core's order: by part id until the first re-sort (window 16), then by the events
    # of windows 0-15, costliest first; a part without events is never claimed
    window = np.array([0, 0, 16, 16, 16])
    part = np.array([0, 1, 0, 1, 2])
    ev = np.array([1, 5, 4, 4, 0])
    assert pm.core_rank(window, part, ev, 3).tolist() == [0, 1, 1, 0, 2]


def _synthetic(rng, n_parts, n_windows, scale):
    rows = [(w, p) for w in range(n_windows) for p in range(n_parts) if rng.random() < 0.7]
    window, part = np.array(rows).T
    events = rng.integers(0, 100 * scale, window.size)
    handoffs = rng.integers(0, int(rng.integers(2, 60)) * scale, window.size)
    stats = dict(parts=n_parts, windows=n_windows, dependency_messages=int(rng.integers(0, 50)))
    return pm.Profile(window, part, events, handoffs, rng.integers(1, 9, n_parts), stats)


K = dict(c_log=5e-9, c_x=30e-9, c_v=200e-9, c_q=2e-9, c_p=6e-9, c_w=900e-9, b=150e-9)


def test_profile_time_on_one_thread_is_linear_in_its_features():
    prof = _synthetic(np.random.default_rng(2), 7, 40, 1)
    k = dict(K, c_ev=120e-9)
    t = prof.time(k, 1)
    f = prof.features()
    assert t["barrier"] == 0
    assert sum(t.values()) == pytest.approx(k["c_ev"] * f["E"] + sum(k[c] * f[c] for c in (*pm.EVENT, *pm.WINDOW)))
    # more threads: never slower in the parts' turns, the closing step the same, and a
    # barrier in each window with two turns or more
    many = prof.time(k, prof.P, "lpt")
    assert many["turns"] <= prof.time(k, 2)["turns"] <= t["turns"]
    assert many["serial"] == t["serial"]
    two_or_more = np.count_nonzero(np.bincount(prof.t_window, minlength=prof.W) > 1)
    assert prof.time(k, 3)["barrier"] == pytest.approx(two_or_more * 3 * K["b"]) and two_or_more > 0


def test_a_part_takes_its_hand_offs_at_its_turn_in_the_next_window():
    """The profile's hand-offs were taken at the window's end; the core takes them at the
    receiving part's turn in the next window (window.pyx `_prepare`)."""
    prof = pm.Profile([0, 1], [1, 0], [10, 3], [4, 0], np.array([5, 7]),
                      dict(parts=2, windows=2, dependency_messages=0))
    k = dict(K, c_ev=100e-9)
    turn = lambda ev: ev * (k["c_ev"] + k["c_log"] * np.log2(ev)) + k["c_v"]
    # window 0: part 1's events; window 1: part 0's events and part 1's hand-offs, side by side
    assert prof.time(k, 1)["turns"] == pytest.approx(turn(10) + turn(3) + 4 * k["c_x"] + 7 * k["c_q"])
    assert prof.time(k, 2)["turns"] == pytest.approx(turn(10) + max(turn(3), 4 * k["c_x"] + 7 * k["c_q"]))
    assert prof.time(k, 2)["barrier"] == pytest.approx(2 * k["b"])      # window 1 only


def test_fit_recovers_known_constants(monkeypatch):
    """Runs made by the model itself with known constants: a thin workload (its own c_ev
    and window constants), two others sharing its window constants, each its c_ev."""
    rng = np.random.default_rng(3)
    timed = {"thin": ["p2", "p4", "p8", "p16", "p40", "p64"], "a": ["none", "p2", "p4", "p9", "p20", "p33"],
             "b": ["none", "p3", "p5", "p9", "p12"]}
    c_ev = {"thin": 90e-9, "a": 140e-9, "b": 260e-9}
    profiles, measured = {}, []
    for wl, levels in timed.items():
        for lv in levels:
            if lv == "none":
                continue
            scale = 1 if wl == "thin" else 20
            prof = profiles[wl, lv] = _synthetic(rng, int(lv[1:]), int(rng.integers(20, 80)), scale)
            for n in (1, 2):
                t = sum(prof.time(dict(K, c_ev=c_ev[wl]), n).values())
                measured.append(dict(workload=wl, level=lv, threads=n, profiled=False, wall_s=t))
    for name, value in dict(TIMED=timed, THIN=("thin",), THIN_OF=dict.fromkeys(timed, "thin"),
                            BARRIER_FIT=("thin",)).items():
        monkeypatch.setattr(pm, name, value)
    k = pm.fit(measured, profiles)
    for wl in timed:
        got = pm.constants(k, wl)
        for c in K:
            assert got[c] == pytest.approx(K[c], rel=1e-4), c
        assert got["c_ev"] == pytest.approx(c_ev[wl], rel=1e-4)


def test_fit_linear_clamps_a_negative_constant_at_zero():
    X = np.array([[1.0, 1], [2, 1], [3, 1], [4, 1]])
    y = np.array([1.0, 2, 3, 4]) * 2 - 0.1       # an intercept of -0.1: not a cost
    k = pm.fit_linear(X, y, ["slope", "fixed"])
    assert k["fixed"] == 0 and k["slope"] > 0
