"""validation/flow_vs_packet.py's comparison and table, on synthetic runs (nothing is run):
the ratios flow / packet, the per-collective matching, the 5% target marks, and the cases
it draws from the shipped sweeps."""
import importlib.util
import os
import sys

import pytest

from helpers import ROOT
from rocesim.cc import builtin_schemes


def _script():
    spec = importlib.util.spec_from_file_location("flow_vs_packet",
                                                  os.path.join(ROOT, "validation", "flow_vs_packet.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


FVP = _script()


def _run(iterations=None, durations=None, bg=(None, None), cpu=10.0, ids=None, sizes=None, **extra):
    """A synthetic run_one result."""
    r = dict(mode="packet", cpu_s=cpu, flows_total=4, flows_completed=4, stalled=False, deadlock=False,
             background_slowdown_p50=bg[0], background_slowdown_p99=bg[1], **extra)
    if iterations is not None:
        r["iterations_ns"] = iterations
    if durations is not None:
        n = len(durations)
        r["collectives"] = dict(id=ids or list(range(n)), op=["allreduce"] * n, algorithm=["ring"] * n,
                                size_bytes=sizes or [1 << 20] * n, ranks=[8] * n, duration_ns=durations)
    return r


def test_ratios_and_target_within():
    """Iteration mean, collective percentiles and the matched collectives' mean ratio, each
    flow / packet; all within 5% -> nothing outside, CPU ratio = packet / flow."""
    p = _run(iterations=[100.0, 300.0], durations=[10.0, 20.0, 30.0], cpu=20.0)
    f = _run(iterations=[104.0, 306.0], durations=[10.4, 20.0, 29.4], cpu=2.0)
    c = FVP.compare(p, f)
    assert c["iteration"] == (200.0, 205.0, pytest.approx(1.025))
    assert c["coll_p50"][2] == pytest.approx(1.0)
    assert c["coll_ratio"] == pytest.approx((1.04 + 1.0 + 0.98) / 3)
    assert (c["coll_ratio_min"], c["coll_ratio_max"]) == (pytest.approx(0.98), pytest.approx(1.04))
    assert c["cpu"] == (20.0, 2.0, pytest.approx(10.0))
    assert c["outside"] == [] and c["problems"] == []
    assert c["checked"] == ["iteration", "coll_p50", "coll_p99", "coll_ratio"]
    assert FVP.row("a", "dcqcn", c).endswith("| within | - |")         # no bare fluid run


def test_target_outside_named_with_its_deviation():
    """An iteration 10% longer and a p99 collective 20% longer are outside, each named with
    its deviation in the row; the background figures do not count when there are collectives."""
    p = _run(iterations=[100.0], durations=[10.0] * 98 + [100.0] * 2, bg=(1.0, 10.0))
    f = _run(iterations=[110.0], durations=[10.0] * 98 + [120.0] * 2, bg=(1.0, 3.0))
    c = FVP.compare(p, f)
    assert c["outside"] == ["iteration", "coll_p99"]
    assert c["coll_p99"] == (100.0, 120.0, pytest.approx(1.2))           # the 99th of 100: the top two
    assert c["coll_ratio"] == pytest.approx((98 + 2 * 1.2) / 100)        # 1.004: the mean hides the outliers
    line = FVP.row("a", "dcqcn", c)
    assert "**outside**: iteration +10.0%" in line and "coll p99 +" in line
    assert c["bg_p99"][2] == pytest.approx(0.3)


def test_exactly_five_percent_is_within():
    c = FVP.compare(_run(iterations=[100.0]), _run(iterations=[105.0]))
    assert c["outside"] == [] and c["checked"] == ["iteration"]
    c = FVP.compare(_run(iterations=[100.0]), _run(iterations=[105.1]))
    assert c["outside"] == ["iteration"]


def test_background_only_case_is_checked_on_slowdown():
    c = FVP.compare(_run(bg=(2.0, 20.0)), _run(bg=(2.05, 8.0)))
    assert c["checked"] == ["bg_p50", "bg_p99"] and c["outside"] == ["bg_p99"]
    assert c["bg_p99"] == (20.0, 8.0, pytest.approx(0.4))


def test_collectives_matched_by_id_and_unfinished_left_out():
    """A collective unfinished at one level is left out of the matched ratios; collectives that
    differ (another size under the same id) are not matched and the row says so."""
    p = _run(durations=[10.0, 20.0, None], ids=[5, 6, 7])
    f = _run(durations=[15.0, None, 40.0], ids=[5, 6, 7])
    idx, ratio = FVP.matched(p, f)
    assert list(idx) == [0] and list(ratio) == [1.5]
    q = _run(durations=[10.0, 20.0], sizes=[1, 2])
    g = _run(durations=[10.0, 20.0], sizes=[1, 3])
    assert FVP.matched(q, g) is None
    assert any("collectives differ" in x for x in FVP.compare(q, g)["problems"])


def test_problems_stalled_unfinished_failed():
    p = _run(iterations=[1.0])
    assert "packet: deadlock" in FVP.compare(dict(p, deadlock=True), p)["problems"][0]
    assert "flow: unfinished (3 of 4 flows)" in FVP.compare(p, dict(p, flows_completed=3))["problems"][0]
    c = FVP.compare(p, dict(mode="flow", error="ScenarioError: x"))
    assert c["problems"] == ["flow run failed: ScenarioError: x"] and "iteration" not in c
    assert "**check**" in FVP.row("a", "none", c)


def test_table_rows_skips_and_groups():
    """One row per (case, scheme) both levels ran, one row naming the schemes a long case
    skips and why, and the per-collective groups of a row outside the target."""
    case = FVP.Case("x.yaml", "platform", ("dcqcn",), "too long")
    ms = 1e6
    res = {FVP.key("big", "dcqcn", "packet"): _run(iterations=[100 * ms], durations=[10 * ms, 10 * ms, 50 * ms]),
           FVP.key("big", "dcqcn", "flow"): _run(iterations=[120 * ms], durations=[11 * ms, 11 * ms, 50 * ms])}
    res[FVP.key("big", "dcqcn", FVP.BARE)] = _run(iterations=[98 * ms], durations=[10 * ms, 10 * ms, 50 * ms])
    text, done = FVP.table({"big": case}, res)
    lines = text.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| big | dcqcn | 100 / 120 (+20.0%)")
    assert lines[2].endswith("| iteration -2.0%: within |")           # the bare fluid's farthest figure
    assert lines[3].startswith("| big | none, dcqcn_win, hpcc, timely, dctcp, swift, nscc | skipped: too long |")
    assert all(ln.count("|") == lines[0].count("|") for ln in lines)
    groups = FVP.by_collective(res[FVP.key("big", "dcqcn", "packet")], res[FVP.key("big", "dcqcn", "flow")])
    assert [(g[3], g[4]) for g in groups] == [(1 << 20, 3)]
    assert groups[0][6] == pytest.approx((1.1 + 1.1 + 1.0) / 3)
    assert "big / dcqcn" in FVP.details(done, res)
    assert FVP.summary_lines(done).startswith("0 of 1 rows within 5% on every figure checked. "
                                              "The bare fluid (share 1, startup 0): 1 of 1.")


def test_schemes_cover_the_registry_and_the_sweeps():
    """Every built-in scheme is run; the gallery's and Khan et al.'s sweeps become cases whose
    schemes are SCHEMES' labels (training16 and the khan2022 scenarios under all of them)."""
    assert {v["cc.scheme"] for v in FVP.SCHEMES.values()} == set(builtin_schemes())
    cases = FVP.all_cases()
    assert set(cases["gallery_training"].schemes) == set(FVP.SCHEMES)
    assert set(cases["khan2022/allreduce_dp"].schemes) == set(FVP.SCHEMES)
    fct = [n for n in cases if n.startswith("gallery_fct/")]
    assert len(fct) == 6 and all(cases[n].path == "scenarios/quickstart.yaml" for n in fct)
    assert all(os.path.exists(os.path.join(ROOT, c.path)) for c in cases.values())


def test_cause_of_a_row_outside():
    """Outside with the bare fluid within: the calibration (1); with the scheme's packet-level
    figure off PFC alone's by more than 5%: the scheme (2); else the case's own cause; a row
    within has none, and the row names the cause."""
    p, f = _run(iterations=[100.0]), _run(iterations=[120.0])
    c = FVP.compare(p, f)
    c["bare"] = FVP.compare(p, _run(iterations=[101.0]))
    assert FVP.cause("astra_dgx16", "dcqcn", c, _run(iterations=[100.0]), p) == 1
    c["bare"] = FVP.compare(p, _run(iterations=[109.0]))                          # 9% < 20% / 2
    assert FVP.cause("astra_dgx16", "dcqcn", c, _run(iterations=[100.0]), p) == 1
    c["bare"] = FVP.compare(p, _run(iterations=[111.0]))                          # 11%: not the share
    assert FVP.cause("astra_dgx16", "dcqcn", c, _run(iterations=[100.0]), p) == 4
    del c["bare"]
    assert FVP.cause("astra_dgx16", "dcqcn", c, _run(iterations=[90.0]), p) == 2      # 100 / 90: +11%
    assert FVP.cause("astra_dgx16", "dcqcn", c, _run(iterations=[96.0]), p) == 4      # +4%: the case's
    assert FVP.cause("gallery_fct/traffic[0].load=0.2,seed=1", "none", c, None, p) == 5
    assert FVP.cause("unknown", "none", c, None, p) is None
    assert FVP.cause("astra_dgx16", "none", FVP.compare(p, p), None, p) is None
    c["cause"] = 4
    assert "**outside** (4: chunk lockstep): iteration +20.0%" in FVP.row("astra_dgx16", "none", c)
