"""Built-in schemes (rocesim/_core/cc_*.pyx) behave as their papers report, at small scale.

DCQCN: Zhu et al. SIGCOMM 2015; DCTCP: Alizadeh et al. SIGCOMM 2010; HPCC: Li et al. SIGCOMM
2019; TIMELY: Mittal et al. SIGCOMM 2015; Swift: Kumar et al. SIGCOMM 2020."""
import numpy as np
import pytest

from rocesim import ScenarioError, Simulation, topology
from rocesim.cc import builtin_schemes

G = 1e9
US = 10**6
MS = 10**9
HUGE = 10**9                 # bytes: flows that outlast the run


def bottleneck_run(cc, n, rate="100Gbps", stop="6ms", params=None, starts=None, switch=None, sample="10us"):
    sim = Simulation(topology.star(n + 1, rate, "1us"), cc=cc, cc_params=params, switch=switch)
    for h in range(1, n + 1):
        sim.add_flow(h, 0, HUGE, start=(starts or {}).get(h, 0))
    res = sim.run(stop=stop, sample_interval=sample)
    port = int(np.flatnonzero(res.ports["peer_node"] == 0)[0])
    q = res.samples["queues"]
    queue = q["queue_bytes"][q["port"] == port]
    qt = q["time_ns"][q["port"] == port]
    return res, qt, queue


def goodput(res, t0_ns, t1_ns, flow=None):
    r = res.samples["rates"]
    m = (r["time_ns"] > t0_ns) & (r["time_ns"] <= t1_ns)
    if flow is not None:
        m &= r["flow_id"] == flow
        return r["throughput_bps"][m].mean()
    return r["throughput_bps"][m].sum() / np.unique(r["time_ns"][m]).size


# --- DCQCN ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dcqcn_paper_40g():
    """Two flows into a 40G link, a third joins at 50 ms (the DCQCN paper's setting)."""
    return bottleneck_run("dcqcn", 3, rate="40Gbps", stop="200ms", params={"preset": "paper"},
                          starts={3: 50 * MS}, sample="1ms")


def test_dcqcn_two_flows_share_a_40g_link(dcqcn_paper_40g):
    res, _, _ = dcqcn_paper_40g
    line = 40 * G * 1000 / 1048                       # payload goodput of a full link
    share = [goodput(res, 30e6, 50e6, f) for f in (0, 1)]
    assert sum(share) == pytest.approx(line, rel=0.03)
    assert share == pytest.approx([line / 2] * 2, rel=0.25)


def test_dcqcn_late_joiner_converges_to_a_third(dcqcn_paper_40g):
    res, _, _ = dcqcn_paper_40g
    line = 40 * G * 1000 / 1048
    share = [goodput(res, 130e6, 200e6, f) for f in (0, 1, 2)]      # within 80 ms of joining
    assert share == pytest.approx([line / 3] * 3, rel=0.12)


def test_dcqcn_queue_stays_between_kmin_and_kmax(dcqcn_paper_40g):
    res, qt, queue = dcqcn_paper_40g
    steady = queue[qt > 20e6]
    kmin, kmax = 5_000, 200_000                     # the paper's thresholds, the preset's defaults
    assert kmin < steady.mean() < kmax
    assert np.percentile(steady, 95) < kmax
    assert res.summary["drops"] == 0 and res.summary["cnps"] > 100


def test_dcqcn_mellanox_preset_converges_too():
    res, _, _ = bottleneck_run("dcqcn", 3, rate="40Gbps", stop="120ms", starts={3: 20 * MS}, sample="1ms")
    line = 40 * G * 1000 / 1048
    share = [goodput(res, 70e6, 120e6, f) for f in (0, 1, 2)]
    assert share == pytest.approx([line / 3] * 3, rel=0.12)


def test_dcqcn_window_variant_bounds_inflight():
    res, qt, queue = bottleneck_run("dcqcn", 8, stop="2ms", params={"window": "bdp"})
    # 8 flows x one BDP each (~54 KB at 100G, 1 us links) bound the queue
    assert queue.max() < 8 * 60_000
    assert res.summary["drops"] == 0


def test_dcqcn_zero_periods_are_refused_before_running():
    for name in ("t_alpha", "t"):
        with pytest.raises(ScenarioError) as e:
            Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn", cc_params={name: "0us"})
        assert e.value.key == f"cc.params.{name}" and "positive" in e.value.reason


# --- DCTCP ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["rate", "window"])
def test_dctcp_queue_hovers_near_k_at_full_throughput(mode):
    res, qt, queue = bottleneck_run("dctcp", 8, stop="4ms", params={"mode": mode})
    k = 300_000                                     # 30 KB x 100G / 10G, the scheme's default step
    steady = queue[qt > 1e6]
    assert 0.4 * k < steady.mean() < 1.3 * k
    assert np.percentile(steady, 99) < 1.5 * k
    assert goodput(res, 1e6, 4e6) > 0.95 * 100 * G * 1000 / 1048


# --- HPCC ----------------------------------------------------------------------------------------

def test_hpcc_keeps_the_queue_near_zero_and_utilization_near_eta():
    res, qt, queue = bottleneck_run("hpcc", 4, stop="3ms")
    steady = queue[qt > 0.5e6]
    assert steady.mean() < 5_000                    # a few packets at most, on average
    assert np.percentile(steady, 99) < 50_000
    wire = goodput(res, 0.5e6, 3e6) * 1090 / 1000   # data packets carry 90 B of headers with INT
    assert wire / (100 * G) == pytest.approx(0.95, abs=0.03)
    assert res.summary["pfc_pauses"] == 0


# --- TIMELY --------------------------------------------------------------------------------------

def test_timely_rtt_rises_above_tlow_and_is_held_below_thigh():
    res, qt, queue = bottleneck_run("timely", 2, stop="4ms", sample="2us")
    base = 4.3e-6
    rtt = base + queue * 8 / 100e9                  # the RTT the queue adds to the base
    steady = rtt[qt > 0.5e6]
    assert steady.max() > 50e-6                     # the rate grows until the RTT passes Tlow
    assert steady.max() < 500e-6                    # and the gradient rule turns it back before Thigh
    assert res.summary["drops"] == 0


# --- Swift ---------------------------------------------------------------------------------------

def test_swift_delay_settles_near_its_target():
    n = 8
    res, qt, queue = bottleneck_run("swift", n, stop="3ms")
    steady = queue[qt > 1e6]
    base_rtt = 4.35e-6
    delay = base_rtt + steady.mean() * 8 / 100e9
    # target = 25 us + 1 hop x 25/6.55 us + flow scaling at the per-flow window
    inflight_pkts = (100e9 * delay / 8) / 1000 / n
    a = 125e-6 / (1 / np.sqrt(0.1) - 1 / np.sqrt(100))
    fs = min(max(a / np.sqrt(inflight_pkts) - a / np.sqrt(100), 0), 125e-6)
    target = 25e-6 + 25e-6 / 6.55 + fs
    assert delay == pytest.approx(target, rel=0.1)
    assert goodput(res, 1e6, 3e6) > 0.95 * 100 * G * 1000 / 1048


# --- every scheme ---------------------------------------------------------------------------------

@pytest.mark.parametrize("cc", list(builtin_schemes()))
def test_no_drops_with_pfc_and_every_flow_completes(cc):
    sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), cc=cc, switch={"buffer": "2MB"})
    for h in range(1, 16):
        sim.add_flow(h, 0, 300_000)                      # a 15-to-1 incast across pods
    for h in range(0, 16, 2):
        sim.add_flow(h, (h + 5) % 16, 500_000, start=20 * US)
    res = sim.run()
    s = res.summary
    assert s["drops"] == 0
    assert s["flows_completed"] == s["flows_total"]
    assert (res.flows["delivered_bytes"] == res.flows["size_bytes"]).all()
    assert s["packets_in_use_at_end"] == 0


# alone, HPCC settles at eta = 95% of line rate and every other scheme at line rate; `none`,
# which sets no rate, is test_idle_fct.py's case (its exact FCT)
IDLE_SLOWDOWN = {cc: 1 / 0.95 if cc == "hpcc" else 1.0 for cc in builtin_schemes() if cc != "none"}


@pytest.mark.parametrize("cc,slowdown", list(IDLE_SLOWDOWN.items()))
def test_idle_single_flow_is_not_slowed_by_its_scheme(cc, slowdown):
    """Alone in the network, every scheme starts at line rate and stays there, except
    HPCC, which backs off to eta = 95% of the link (its target), once it has an RTT of INT."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc=cc)
    f = sim.add_flow(1, 2, 2_000_000)
    res = sim.run()
    assert res.flows["slowdown"][f] == pytest.approx(slowdown, abs=0.01)


def test_ecn_thresholds_default_to_the_scheme():
    def kmin_kmax(cc, **kw):
        net = Simulation(topology.star(3, "100Gbps", "1us"), cc=cc, **kw).network.arrays
        return int(net["port_kmin"][0]), int(net["port_kmax"][0]), float(net["port_pmax"][0])
    assert kmin_kmax("dctcp") == (300_000, 300_000, 1.0)
    assert kmin_kmax("dcqcn") == (400_000, 1_600_000, 0.2)
    assert kmin_kmax("hpcc") == (400_000, 1_600_000, 0.2)
    assert kmin_kmax("dctcp", switch={"ecn": {"kmin": "50KB", "kmax": "50KB"}})[:2] == (50_000, 50_000)


def test_scheme_parameters_are_checked():
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), cc="hpcc", cc_params={"eta": 1.5})
    assert e.value.key == "cc.params.eta"
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn", cc_params={"rai": 40})
    assert e.value.key == "cc.params.rai" and "unit" in e.value.reason
    with pytest.raises(ScenarioError) as e:
        Simulation(topology.star(3, "100Gbps", "1us"), cc="swift", cc_params={"alpha": 1})
    assert e.value.key == "cc.params.alpha"


@pytest.mark.parametrize("cc,params", [("dcqcn", {"window": "bdp"}), ("dctcp", {}), ("none", {"window": "bdp"})])
def test_bdp_windows_survive_long_fast_paths(cc, params):
    """400G x ~160 us of RTT is 8 MB of BDP, and 3.2e19 bit-ps: beyond int64 if multiplied
    naively.  A flow with a one-BDP window must still run at line rate."""
    sim = Simulation(topology.star(3, "400Gbps", "40us"), cc=cc, cc_params=params)
    f = sim.add_flow(1, 2, 20_000_000)
    res = sim.run(stop="10ms")
    assert res.flows["slowdown"][f] == pytest.approx(1.0, abs=0.01)
    assert sim.network.arrays["port_headroom"].min() > 0          # max(3 x rate x delay, worst case), no overflow


# --- fidelity to the HPCC ns-3 fork's defaults ----------------------------------------------

def test_declared_defaults_are_the_published_values():
    """The declarations keep their fractions (a .pyx folds `1 / 256` to 0 under cdivision)."""
    from rocesim.cc import get_scheme
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc="dcqcn")
    sim.add_flow(1, 2, 10_000)
    sim.run()
    assert sim.cc_final["g"] == 1 / 256 and sim.cc_final["notify"] == "ack"
    assert get_scheme("dctcp").resolve_params(None)["g"] == 1 / 16
    assert get_scheme("timely").resolve_params(None)["segment"] == "window"


def test_dcqcn_mellanox_hears_congestion_from_acks_not_cnp_packets():
    """The fork flags every ACK of a CE-marked packet as a CNP (no CNP packets, no limit):
    rates are cut while no CNP packet crosses the network, and the queue stays below Kmax."""
    res, qt, queue = bottleneck_run("dcqcn", 8, stop="3ms")
    r = res.samples["rates"]
    assert res.summary["cnps"] == 0 and res.ports["ecn_marks"].sum() > 100
    assert r["rate_bps"][r["time_ns"] > 1e6].max() < 50 * G          # every flow was cut
    assert np.percentile(queue[qt > 1e6], 99) < 1_600_000             # Kmax at 100G


def test_the_notifications_a_scheme_heard_are_reported_whatever_carried_them():
    """DCQCN's default preset hears congestion from ACKs' ECN echo, not CNP packets: the
    summary counts those echoes as its notifications (and says so) next to 0 CNPs; the paper
    preset's notifications are the CNP packets that reached the senders."""
    def run(params):
        sim = Simulation(topology.star(9, "100Gbps", "1us"), cc="dcqcn", cc_params=params)
        for h in range(1, 9):
            sim.add_flow(h, 0, 1_000_000)
        return sim.run(stop="1ms")
    res = run({})
    ack = res.summary
    assert ack["cnps"] == 0 and ack["notification_carrier"] == "ack"
    assert ack["congestion_notifications"] == ack["ecn_echoes"] > 100
    paper = run({"preset": "paper"}).summary
    assert paper["notification_carrier"] == "cnp"
    assert 0 < paper["congestion_notifications"] <= paper["cnps"] and paper["ecn_echoes"] > 0
    assert f"congestion notifications {ack['congestion_notifications']} (ECN echoes on ACKs)  CNPs 0" in res.describe()


def test_dcqcn_paper_notification_point_sends_at_most_one_cnp_per_50us():
    res, _, _ = bottleneck_run("dcqcn", 8, stop="3ms", params={"preset": "paper"})
    assert 0 < res.summary["cnps"] <= 8 * (3000 // 50 + 1)


def test_windows_and_hpcc_t_come_from_the_longest_host_pair():
    """As the fork's third.cc: T (and the BDP of windows) is the largest base RTT between any
    two hosts, even when every flow stays in one rack.  k=4 fat tree: 6 links each way."""
    from helpers import ser_ps
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, cc="hpcc")
    sim.add_flow(0, 1, 10_000)                       # same edge switch: 2 links
    sim.run()
    data, ack = 1000 + 48 + 42, 60 + 28           # HPCC: INT on data (42 B) and ACKs (88 B)
    expected = 6 * (ser_ps(data, 10**11) + US) + 6 * (ser_ps(ack, 10**11) + US)
    assert sim.cc_final["t"] == expected
    dctcp = Simulation(t, cc="dctcp")
    dctcp.add_flow(0, 1, 10_000)
    dctcp.run()
    rtt = 6 * (ser_ps(1048, 10**11) + US) + 6 * (ser_ps(60, 10**11) + US)
    assert dctcp.cc_final["window"] == int(rtt * 100e9 / 8e12)


def test_timely_segment_is_a_window_or_a_positive_size():
    from rocesim.cc import get_scheme
    timely = get_scheme("timely")
    assert timely.resolve_params({"segment": "16KB"})["segment"] == 16_000
    for bad in (0, "0B", "often"):
        with pytest.raises(ScenarioError, match="cc.params.segment"):
            timely.resolve_params({"segment": bad})
