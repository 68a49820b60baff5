"""The flow mode's calibration: the bare fluid by default (`flow:` 'bare'), the scheme's entry
in rocesim/cc/flow_calibration.json with 'auto', a given `flow.share` / `flow.startup` instead
of either, packet mode ignores it, and the fit of validation/flow_calibration.py recovers known
numbers."""
import functools
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

from helpers import ROOT, cli_error, scenario_error, small_scenario, write_scenario
from rocesim import ScenarioError, Simulation, config, topology
from rocesim import scenario as sc
from rocesim.cc import builtin_schemes
from rocesim.cc.calibration import UNCALIBRATED, calibration_table, flow_calibration
from rocesim.cli import main

RATE = 100e9
AUTO = {"share": "auto", "startup": "auto"}        # each scheme's calibration
BUILTIN = [name for name, s in builtin_schemes().items() if s.py_class is None]


def _incast(cc="none", mode="flow", n=4, size=2_000_000, **kw):
    """An n-to-1 incast on a star at 100G, flows starting together, and its results."""
    sim = Simulation(topology.star(n + 1, "100Gbps", "1us"), cc=cc, mode=mode, **kw)
    for i in range(1, n + 1):
        sim.add_flow(i, 0, size)
    return sim, sim.run(progress=False)


def _incast_closed_form(sim, res, n, size, share, startup_ps):
    """The fluid's n-to-1 incast: the receiver's link, at share x its rate, carries the n flows'
    wire bytes, so each takes n / share times a lone flow's transfer at line rate; the rest of
    its ideal FCT (latency, the last packet's hops, the ACK) is unchanged, and every flow joins
    `startup_ps` late."""
    p = sim.network.params
    hdr = p["header"] + (p["int_header"] if p["int_enabled"] else 0)
    wire_ns = (size + -(-size // p["payload"]) * hdr) * 8 / RATE * 1e9
    return res.flows["ideal_fct_ns"] + (n / share - 1) * wire_ns + startup_ps / 1000


# --- the stored calibration, and its use ---------------------------------------------------------

def test_every_builtin_scheme_has_a_calibration_in_range():
    """The file covers every built-in scheme (a new scheme: run `python
    validation/flow_calibration.py`), with 0 < share <= 1 and a startup >= 0 in whole ps."""
    table = calibration_table()
    assert set(table["schemes"]) == set(BUILTIN)
    assert table["command"] == "python validation/flow_calibration.py"
    for name in BUILTIN:
        share, startup = flow_calibration(name)
        assert 0 < share <= 1 and isinstance(startup, int) and startup >= 0


def test_the_stored_cases_agree_with_the_stored_numbers():
    """Each case's calibrated figure is the model's (startup + A / share + L) and its errors
    are relative to the packet level's, as the script wrote them."""
    for name, entry in calibration_table()["schemes"].items():
        for r in entry["cases"]:
            model = entry["startup_ps"] / 1000 + r["a_ns"] / entry["share"] + r["latency_ns"]
            assert r["calibrated_ns"] == pytest.approx(model, rel=1e-6, abs=0.01), (name, r["case"])
            assert r["error_after"] == pytest.approx(r["calibrated_ns"] / r["packet_ns"] - 1, abs=1e-6)
            assert r["error_before"] == pytest.approx(r["flow_ns"] / r["packet_ns"] - 1, abs=1e-6)


def test_some_scheme_is_calibrated_below_the_full_link():
    """The calibration is not the bare fluid for every scheme (else the tests below would
    not tell a calibrated run from an uncalibrated one)."""
    assert min(flow_calibration(name)[0] for name in BUILTIN) < 0.95


@pytest.mark.parametrize("cc", BUILTIN)
def test_a_flow_mode_incast_runs_at_the_calibrated_share(cc):
    """`flow: {share: auto, startup: auto}`: the scheme's calibrated share and startup reach
    the core; the incast's FCTs are the closed form with the links' capacity x share."""
    share, startup = flow_calibration(cc)
    sim, res = _incast(cc, flow=AUTO)
    assert sim.fluid_calibration == {"share": share, "startup": startup, "source": {"share": "calibration",
                                                                       "startup": "calibration"}}
    assert sim.network.params["fluid_share"] == share and sim.network.params["fluid_startup_ps"] == startup
    assert np.allclose(res.flows["fct_ns"], _incast_closed_form(sim, res, 4, 2_000_000, share, startup),
                       rtol=1e-9, atol=0.01)
    assert (res.summary["flow_share"], res.summary["flow_startup_ns"]) == (share, startup / 1000)
    assert res.summary["flow_calibration"] == {"share": "calibration", "startup": "calibration"}


def test_flow_mode_runs_the_bare_fluid_by_default(tmp_path, capsys):
    """`flow:` left out: every link's full capacity and no start-up cost, whatever the scheme
    (validation/FLOW.md: nearer the packet level on training traffic than the calibration);
    summary.json and `rocesim check` say so, and check names the calibration not used."""
    sim, res = _incast("dcqcn")
    assert sim.fluid_calibration == {"share": 1.0, "startup": 0, "source": {"share": "bare", "startup": "bare"}}
    assert np.allclose(res.flows["fct_ns"], _incast_closed_form(sim, res, 4, 2_000_000, 1.0, 0),
                       rtol=1e-9, atol=0.01)
    assert (res.summary["flow_share"], res.summary["flow_startup_ns"]) == (1.0, 0.0)
    assert res.summary["flow_calibration"] == {"share": "bare", "startup": "bare"}
    path = write_scenario(tmp_path, small_scenario(mode="flow", cc={"scheme": "dcqcn"}))
    assert main(["check", path]) == 0
    share, startup = flow_calibration("dcqcn")
    assert ("flow mode: flow.share 1 (the bare fluid's, the default), flow.startup 0 ns (the bare fluid's, "
            f"the default); dcqcn's calibration, `flow: {{share: auto, startup: auto}}`, is {share:g} / "
            f"{startup / 1000:g} ns") in capsys.readouterr().err
    assert main(["check", path, "--set", "flow.share=auto"]) == 0
    assert f"flow mode: flow.share {share:g} (dcqcn's calibration)" in capsys.readouterr().err


def test_a_given_share_and_startup_override_the_calibration():
    sim, res = _incast("dcqcn", flow={"share": 0.5, "startup": "2us"})
    assert sim.fluid_calibration["source"] == {"share": "given", "startup": "given"}
    assert np.allclose(res.flows["fct_ns"], _incast_closed_form(sim, res, 4, 2_000_000, 0.5, 2_000_000),
                       rtol=1e-9, atol=0.01)
    assert (res.summary["flow_share"], res.summary["flow_startup_ns"]) == (0.5, 2000.0)
    # one given, the other the scheme's or the bare fluid's
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn", mode="flow",
                     flow={"share": "auto", "startup": "0us"})
    assert sim.fluid_calibration == {"share": flow_calibration("dcqcn")[0], "startup": 0,
                        "source": {"share": "calibration", "startup": "given"}}
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn", mode="flow", flow={"share": 0.5})
    assert sim.fluid_calibration == {"share": 0.5, "startup": 0, "source": {"share": "given", "startup": "bare"}}


@pytest.mark.parametrize("rate", ["40Gbps", "50Gbps"])
def test_the_share_applies_only_where_demand_exceeds_the_link(rate):
    """Two flows meet at the receiver's link (100G) but are capped below it in sum (40G
    each) or exactly at it (50G each, the tie of an all-to-all's perfect balance): the link
    is not their bottleneck, so no scheme would act there and the share does not apply:
    each takes exactly what the same capped flow takes alone.  Uncapped, the same two share
    the link x the share."""
    def run(n, cap):
        sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn", mode="flow",
                         flow={"share": 0.5, "startup": "0us"})
        for i in range(1, n + 1):
            sim.add_flow(i, 0, 2_000_000, rate=cap)
        return sim, sim.run(progress=False)
    _, alone = run(1, rate)
    _, met = run(2, rate)
    assert np.array_equal(met.flows["fct_ns"], np.repeat(alone.flows["fct_ns"], 2))
    sim, shared = run(2, None)
    assert np.allclose(shared.flows["fct_ns"], _incast_closed_form(sim, shared, 2, 2_000_000, 0.5, 0),
                       rtol=1e-9, atol=0.01)


def test_acks_alone_do_not_make_a_link_where_flows_meet_shared():
    """A ring's hop across the spines: host 0 sends two flows to host 2, one over each spine,
    so they meet at host 2's link, which also carries the ACKs of host 2's own flow to host
    3.  Those ACKs make that link the bare fluid's bottleneck (the two flows are slower with
    them than without), yet the data there is what host 0's one NIC sends, no more than the
    link: no queue for a scheme to act on, so the share does not apply and the run is the
    bare fluid's, exactly.  A second sender (host 1) to host 2 makes the data exceed the
    link: the three flows then share it x the share, as an incast does."""
    def run(share, flows):
        sim = Simulation(topology.leaf_spine(2, 2, 2, "100Gbps", "1us"), cc="dcqcn", mode="flow",
                         flow={"share": share, "startup": "0us"})
        for src, dst, path in flows:
            sim.add_flow(src, dst, 2_000_000, path=path)
        return sim, sim.run(progress=False)
    # hosts 0, 1 on leaf 4; hosts 2, 3 on leaf 5; spines 6, 7
    hop = [(0, 2, [0, 4, 6, 5, 2]), (0, 2, [0, 4, 7, 5, 2])]
    ring = hop + [(2, 3, None)]
    _, half = run(0.5, ring)
    _, bare = run(1, ring)
    _, without_acks = run(1, hop)
    assert np.array_equal(half.flows["fct_ns"], bare.flows["fct_ns"])
    assert (bare.flows["fct_ns"][:2] > without_acks.flows["fct_ns"]).all()
    sim, incast = run(0.5, hop + [(1, 2, [1, 4, 6, 5, 2])])
    assert np.allclose(incast.flows["fct_ns"], _incast_closed_form(sim, incast, 3, 2_000_000, 0.5, 0),
                       rtol=1e-9, atol=0.01)


def test_a_scheme_without_an_entry_runs_the_bare_fluid(monkeypatch):
    monkeypatch.setattr("rocesim.cc.calibration.flow_calibration", lambda name: None)
    sim, res = _incast("dcqcn", flow=AUTO)
    assert UNCALIBRATED == (1.0, 0)
    assert sim.fluid_calibration == {"share": 1.0, "startup": 0, "source": {"share": "none", "startup": "none"}}
    assert np.allclose(res.flows["fct_ns"], _incast_closed_form(sim, res, 4, 2_000_000, 1.0, 0), atol=0.01)


def test_packet_mode_ignores_the_flow_section_but_checks_it():
    """The same run with and without `flow:`; summary.json's flow keys are null; a bad
    value is still refused (one scenario runs in both modes)."""
    _, plain = _incast("dcqcn", mode="packet", n=2, size=100_000)
    _, given = _incast("dcqcn", mode="packet", n=2, size=100_000, flow={"share": 0.3, "startup": "5us"})
    assert np.array_equal(plain.flows["fct_ns"], given.flows["fct_ns"])
    assert all(given.summary[k] is None for k in ("flow_share", "flow_startup_ns", "flow_calibration"))
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), flow={"share": 2})
    assert e.value.key == "flow.share"


# --- the setting ---------------------------------------------------------------------------------

@pytest.mark.parametrize("flow, key, words", [
    ({"share": 0}, "flow.share", "a number in (0, 1]"),
    ({"share": 1.5}, "flow.share", "a number in (0, 1]"),
    ({"share": -0.2}, "flow.share", "a number in (0, 1]"),
    ({"share": "half"}, "flow.share", "a number in (0, 1]"),
    ({"share": True}, "flow.share", "a number in (0, 1]"),
    ({"startup": 5}, "flow.startup", "unit"),
    ({"startup": "-1us"}, "flow.startup", ""),
    ({"startup": "soon"}, "flow.startup", ""),
    ({"shares": 0.5}, "flow.shares", "valid keys here: share, startup"),
    (0.9, "flow", "expected a mapping"),
])
def test_bad_flow_settings_name_the_key(flow, key, words):
    for mode in ("flow", "packet"):
        with pytest.raises(ScenarioError) as e:
            Simulation(topology.star(3, "100Gbps", "1us"), mode=mode, flow=flow)
        assert e.value.key == key and words in e.value.reason
    assert scenario_error(small_scenario(mode="flow", flow=flow)).key == key


def test_the_flow_section_in_yaml_set_and_check(tmp_path, capsys):
    path = write_scenario(tmp_path, small_scenario(mode="flow", cc={"scheme": "dcqcn"}))
    assert sc.load(path).sim.fluid_calibration["share"] == 1.0
    assert sc.load(path, ["flow.share=auto"]).sim.fluid_calibration["share"] == flow_calibration("dcqcn")[0]
    sim = sc.load(path, ["flow.share=0.7", "flow.startup=3us"]).sim
    assert (sim.fluid_calibration["share"], sim.fluid_calibration["startup"]) == (0.7, 3_000_000)
    assert cli_error(capsys, "check", path, "--set", "flow.share=0").startswith("rocesim: error: flow.share: ")


def test_the_flow_summary_keys_in_summary_json(tmp_path, capsys):
    path = write_scenario(tmp_path, small_scenario(mode="flow", flow={"share": 0.8}, output={"plot": False}))
    assert main(["run", path, "-o", str(tmp_path / "out"), "-q"]) == 0
    capsys.readouterr()
    with open(tmp_path / "out" / "summary.json") as f:
        summary = json.load(f)
    assert summary["flow_share"] == 0.8 and summary["flow_startup_ns"] == 0.0
    assert summary["flow_calibration"] == {"share": "given", "startup": "bare"}


def test_rocesim_keys_lists_the_flow_section(capsys):
    assert main(["keys", "flow"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line for line in out if not line.startswith(" ")] == ["flow.share = bare", "flow.startup = bare"]
    assert "ignored in packet mode" in config.FLOW.doc


# --- the script's fit ----------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _script():
    """validation/flow_calibration.py as a module (registered: its dataclass needs it)."""
    spec = importlib.util.spec_from_file_location("validation_flow_calibration",
                                                  os.path.join(ROOT, "validation", "flow_calibration.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def _synthetic(seed=3, n=12):
    rng = np.random.default_rng(seed)
    a = rng.uniform(5e3, 3e6, n)                # ns of transfer at the full link
    lat = rng.uniform(4e3, 9e3, n)
    weight = rng.uniform(0.1, 1.0, n)
    return a, lat, weight


@pytest.mark.parametrize("share, startup", [(0.77, 0.0), (0.9, 1500.0), (1.0, 800.0), (0.6, 20.0)])
def test_the_fit_recovers_the_share_and_startup_that_made_the_numbers(share, startup):
    a, lat, weight = _synthetic()
    packet = startup + a / share + lat
    got_share, got_startup = _script().fit(packet, a, lat, weight)
    assert got_share == pytest.approx(share, rel=1e-9)
    assert got_startup == pytest.approx(startup, rel=1e-6, abs=1e-6)


def _cost(packet, a, lat, weight, startup, x):
    """The fit's objective at (startup, x = 1 / share), for arrays of candidates."""
    res = (np.add.outer(startup, np.multiply.outer(x, a)) + lat - packet) / packet
    return (weight * res ** 2).sum(axis=-1)


@pytest.mark.parametrize("startup, x, noise", [(-400.0, 1.25, 0.0), (3000.0, 0.9, 0.0), (200.0, 1.3, 0.05),
                                               (-2000.0, 0.95, 0.02), (0.0, 1.1, 0.2)])
def test_the_fit_is_the_best_point_within_its_bounds(startup, x, noise):
    """Packet figures the bounds do not allow (a negative start-up cost, a share above 1,
    noise): the fit is within 0 < share <= 1, startup >= 0, and no point of a fine grid
    over that region does better."""
    a, lat, weight = _synthetic()
    packet = (startup + a * x + lat) * (1 + noise * np.random.default_rng(7).standard_normal(a.size))
    share, got = _script().fit(packet, a, lat, weight)
    assert 0 < share <= 1 and got >= 0
    grid = _cost(packet, a, lat, weight, np.linspace(0, 6000, 601), np.linspace(1, 2, 1001))
    assert _cost(packet, a, lat, weight, got, 1 / share) <= grid.min() * (1 + 1e-9) + 1e-15


def test_the_fit_of_a_fluid_too_slow_everywhere_is_the_bare_fluid():
    """Every packet figure below the bare fluid's (x = 0.8, no start-up cost): share 1, startup 0."""
    a, lat, weight = _synthetic()
    assert _script().fit(a * 0.8 + lat, a, lat, weight) == (1.0, 0.0)
