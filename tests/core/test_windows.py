"""A run in parts (issue 20, stage 3: window.pyx), on one thread: the network cut by the
topology (`Simulation(partition="leaves" | "pods")`), every part running its events of a
window [T, T + lookahead), then taking the packets that crossed its incoming cut links.

The results depend on the partition, never on the order the parts are visited in (the
`debug.part_order`: parts share no hidden state) nor on where slices end; and a run
in parts keeps the run's invariants (bytes conserved, no clock going back, nothing left
at the end, an idle network's flow at its closed-form time)."""
import numpy as np
import pytest

from rocesim import Simulation, topology, traffic
from rocesim._core import debug, engine
from rocesim.errors import ScenarioError
from test_parts import assert_same, readbacks

FS_DONE = 2      # defs.pxd
LEVELS = ("leaves", "pods")
ORDERS = [("reverse", 0), ("shuffle", 1), ("shuffle", 2)]


def pfc_fat_tree(part, nic=None):
    """fat_tree(4) under DCQCN with PFC, small buffers and low ECN thresholds: a
    permutation and a 12-to-1 incast across pods, which pause links (also cut ones) and
    mark packets (the parts' RNG streams)."""
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, seed=3, cc="dcqcn", cc_params={"notify": "cnp"}, partition=part, nic=nic,
                     switch={"buffer": "300KB", "pfc": {"enabled": True},
                             "ecn": {"kmin": "20KB", "kmax": "80KB", "pmax": 0.2}})
    sim.add_flows(traffic.permutation(t.n_hosts, 400_000, 0, np.random.default_rng(3)))
    sim.add_flows(traffic.incast(list(range(1, 13)), 0, 300_000, 20 * 10**6))
    return sim


def lossy_fat_tree(part):
    """fat_tree(4) without PFC: a 12-to-1 incast that drops, repaired by selective repeat,
    DCQCN's CNPs answering ECN marks, and short flows back."""
    t = topology.fat_tree(4, "100Gbps", "1us")
    sim = Simulation(t, seed=5, cc="dcqcn", cc_params={"notify": "cnp"}, partition=part,
                     switch={"buffer": "150KB", "pfc": {"enabled": False},
                             "ecn": {"kmin": "10KB", "kmax": "60KB", "pmax": 0.2}},
                     nic={"loss_recovery": "selective_repeat", "rto": "100us"})
    for h in range(1, 13):
        sim.add_flow(h, 0, 300_000, start=h * 7_919)
        sim.add_flow(0, h, 40_000, start=h * 5_003)
    return sim


def collectives_fat_tree(part):
    """fat_tree(4) with PFC: an NCCL ring all-reduce on every host, then a pairwise
    all-to-all after it: dependencies whose parent completes in one leaf group (or pod)
    and whose child starts in another."""
    sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), seed=7, partition=part,
                     switch={"buffer": "1MB", "pfc": {"enabled": True}})
    ar = sim.add_collective("allreduce", "nccl_ring", size="512KB")
    sim.add_collective("alltoall", "pairwise", size="256KB", after=ar.done_nodes)
    return sim


def faults_fat_tree(part):
    """pfc_fat_tree with links that go down while loaded, then up (routes kept: what is
    sent to them is lost, and timeouts recover it): an aggregation-core link (cut at
    both levels, still down at mid-run), an edge-aggregation link (cut at `leaves` only)
    and a host's link (never cut); and a core link slowed to 25G."""
    sim = pfc_fat_tree(part, nic={"rto": "100us"})
    sim.add_fault("link_down", "30us", link=[24, 32], until="200us", reroute_after="never")
    sim.add_fault("link_down", "55us", link=[16, 24], until="70us", reroute_after="never")
    sim.add_fault("link_down", "40us", link=[5, 18], until="90us", reroute_after="never")
    sim.add_fault("link_rate", "20us", link=[26, 33], rate="25Gbps")
    return sim


CASES = {"pfc_dcqcn": pfc_fat_tree, "lossy_selective_repeat": lossy_fat_tree, "link_faults": faults_fat_tree}
BUILDERS = {**CASES, "collectives": collectives_fat_tree}


def core_of(case, part, order=("forward", 0)):
    core = BUILDERS[case](part).build_core()
    debug.part_order(core, *order)
    return core


def cut_ports(core):
    return np.flatnonzero(core.cut_ports())


def run_to_the_end_alike(cores, until):
    """Run every core to its end (by `until`, ps): the same readbacks and window counts in
    each; returns the first's readbacks."""
    for c in cores:
        assert c.run(until) == engine.STOP_EMPTY
    end = readbacks(cores[0])
    for c in cores[1:]:
        assert_same(end, readbacks(c))
        assert c.window_stats() == cores[0].window_stats()
    return end


@pytest.mark.parametrize("case", CASES)
def test_the_order_parts_run_in_changes_nothing(case):
    """Forward, reverse and shuffled visits of the parts: every readback equal mid-run
    (inside a window: packets on their way between parts) and at the end."""
    cores = [core_of(case, "leaves")] + [core_of(case, "leaves", o) for o in ORDERS]
    mid = 150 * 10**6 + 123_457
    for c in cores:
        assert c.n_parts == 20 and c.run(mid) == engine.STOP_TIME
    first = readbacks(cores[0])
    for c in cores[1:]:
        assert_same(first, readbacks(c))
    assert first["in_use"] > 0
    end = run_to_the_end_alike(cores, 10**12)
    # what the case is for happened, and across the cut links
    st, ports, cut = end["stats"], end["ports"], cut_ports(cores[0])
    assert ports["ecn_marks"].sum() > 0 and st["cnps"] > 0
    if case == "pfc_dcqcn":
        assert ports["pauses_sent"][cut].sum() > 0 and st["buffer_drops"] == 0
    elif case == "link_faults":
        assert ports["pauses_sent"][cut].sum() > 0 and st["buffer_drops"] == 0
        assert st["link_drops"] > 0 and st["retx_bytes"] > 0
    else:
        assert st["buffer_drops"] > 0 and st["retx_bytes"] > 0 and st["nacks"] > 0


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", CASES)
def test_a_run_in_parts_keeps_the_invariants(case, level):
    """Every flow done with all its bytes, no event before the clock, no packet, queue pair
    or receive record left; every packet that crossed a cut link was handed over once."""
    core = core_of(case, level)
    assert core.n_parts == (20 if level == "leaves" else 8)
    assert core.run(10**12) == engine.STOP_EMPTY
    st, fl, ports = core.stats(), core.flow_arrays(), core.port_arrays()
    sim = CASES[case]("none")
    sizes = sim.flow_column("size")
    assert (fl["state"] == FS_DONE).all()
    np.testing.assert_array_equal(fl["delivered_bytes"], sizes)
    assert st["data_bytes_delivered"] == sizes.sum()
    assert st["time_errors"] == 0
    assert st["packets_in_use"] == 0 and st["queue_pairs_in_use"] == 0 and debug.receive_records_in_use(core) == 0
    assert st["pending_events"] == 0 and core.next_event_ps == -1
    assert st["link_crossings"] == ports["tx_packets"].sum()
    ws = core.window_stats()
    assert ws["handoffs"] == ports["tx_packets"][cut_ports(core)].sum() > 0
    assert ws["lookahead_ps"] == 10**6 and ws["busy_windows"] <= ws["windows"]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", ["pfc_dcqcn", "collectives"])
def test_where_slices_end_changes_nothing(level, case):
    """In one call, or in slices of odd lengths and small event budgets (ending inside
    windows, with packets and dependency messages on their way between parts): the same
    run."""
    whole, sliced = core_of(case, level), core_of(case, level)
    whole.run(10**12)
    t = 0
    while True:
        t += 3_700_001
        status = sliced.run(t, 5_000)
        if status == engine.STOP_EMPTY:
            break
    assert_same(readbacks(whole), readbacks(sliced))


@pytest.mark.parametrize("level", LEVELS)
def test_an_idle_network_flow_in_parts_has_slowdown_one(level):
    """A flow alone across the pods (5 links, 4 of them cut at `leaves`) finishes exactly
    when it does in one part: its ideal time."""
    t = topology.fat_tree(4, "100Gbps", "1us")
    res = {}
    for part in ("none", level):
        sim = Simulation(t, partition=part)
        sim.add_flow(0, 15, 1_234_567, start=3_000)
        res[part] = sim.run()
    assert res[level].flows["slowdown"][0] == 1.0
    for col in ("fct_ns", "rx_fct_ns"):
        assert res[level].flows[col][0] == res["none"].flows[col][0]


def test_one_part_is_the_engine_as_always():
    """A star is one part at every level (the run is the single engine's), and
    `partition="none"` is one part."""
    star = Simulation(topology.star(5, "100Gbps", "1us"), partition="leaves")
    star.add_flow(1, 2, 10_000)
    core = star.build_core()
    assert core.n_parts == 1 and core.window_stats()["windows"] == 0
    core = pfc_fat_tree("none").build_core()
    assert core.n_parts == 1


def test_dependencies_within_a_part_run():
    """A compute step, then a flow from its host, then a flow from that flow's receiver
    in the same leaf group: every dependency completes where its child starts."""
    sim = Simulation(topology.fat_tree(4, "100Gbps", "1us"), partition="leaves")
    c = sim.add_compute(0, "5us")
    f = sim.add_flow(0, 1, 100_000, after=[c], delay="1us")
    g = sim.add_flow(1, 15, 100_000, after=[f])
    res = sim.run()
    fl = res.flows
    assert (fl["fct_ns"] > 0).all() and res.summary["time_errors"] == 0
    assert fl["start_ns"][f] == 6_000
    assert fl["start_ns"][g] == fl["start_ns"][f] + fl["rx_fct_ns"][f]


def link_fault_core(part, link):
    """dumbbell(2, 2) (its middle link cut at `leaves`): a flow each way across the middle,
    and `link` down from 10.0005 us to 30 us, routes kept (timeouts recover).  Returns the
    core and the link's port."""
    sim = Simulation(topology.dumbbell(2, 2, "100Gbps", "1us"), partition=part, nic={"rto": "50us"})
    sim.add_flow(0, 2, 2_000_000, start=1_000)
    sim.add_flow(3, 1, 2_000_000, start=1_500)
    sim.add_fault("link_down", "10.0005us", link=link, until="30us", reroute_after="never")
    core = sim.build_core()
    return core, sim.faults[0].port


@pytest.mark.parametrize("link,cut", [([4, 5], True), ([0, 4], False)], ids=["cut_link", "host_link"])
def test_a_link_down_in_parts_loses_what_one_part_loses(link, cut):
    """No ECN (no random draw) and no dependency: the run in parts is the one-part run,
    packet for packet.  So a link that goes down loses exactly the packets one part loses:
    on a cut link, those on its two wires and those handed off in the window the fault
    falls in, not yet taken by the other part (a dozen per microsecond at 100G).  Only the
    event count (each end's part has its fault's two events) and the packet peak (taken
    at window ends) differ."""
    (one, _), (parts, port) = link_fault_core("none", link), link_fault_core("leaves", link)
    assert parts.n_parts == 2 and parts.cut_ports()[port] == cut
    for c in (one, parts):
        assert c.run(10**12) == engine.STOP_EMPTY
    a, b = readbacks(one), readbacks(parts)
    assert b["stats"].pop("events") == a["stats"].pop("events") + (2 if cut else 0)
    assert b["stats"].pop("packets_peak") > 0
    a["stats"].pop("packets_peak")
    assert_same(a, b)
    assert a["stats"]["link_drops"] > 50 and (a["flows"]["state"] == FS_DONE).all()


@pytest.mark.parametrize("reroute", ["0us", "3us"])
def test_rerouting_around_a_link_down_in_parts_is_the_one_part_run(reroute):
    """The routes change between slices (run_loop.py), as in one part: the same flows,
    losses and completion times."""
    res = {}
    for part in ("none", "leaves"):
        sim = Simulation(topology.leaf_spine(2, 2, 2, "100Gbps", "1us", "100Gbps", "1us"),
                         nic={"rto": "100us"}, partition=part)
        sim.add_flow(0, 2, 1_000_000)
        sim.add_flow(1, 3, 1_000_000)
        sim.add_fault("link_down", "20us", link=[4, 6], until="400us", reroute_after=reroute)
        res[part] = sim.run()
    assert res["leaves"].summary["link_drops"] == res["none"].summary["link_drops"] > 0
    for col in ("fct_ns", "rx_fct_ns", "retx_bytes"):
        np.testing.assert_array_equal(res["leaves"].flows[col], res["none"].flows[col])


L_PS = 1_000_000          # the dumbbell's lookahead: its middle link's delay (1us)


def dumbbell_core(part):
    """dumbbell(2, 2) (two leaf groups, the middle link cut at `leaves`): a flow A->B
    from host 0 to host 2, its children on both sides with delays below and above the
    lookahead, a compute step on host 2 after it and a child of that step on host 1, and
    a flow with one parent on each side."""
    sim = Simulation(topology.dumbbell(2, 2, "100Gbps", "1us"), partition=part)
    f = sim.add_flow(0, 2, 50_000, start=2_000)                 # 0: completes on host 2 (part 1)
    sim.add_flow(3, 1, 20_000, after=[f], delay=300)            # 1: same part, 300 ps
    sim.add_flow(0, 3, 20_000, after=[f], delay=300)            # 2: other part, 300 ps < L
    sim.add_flow(1, 2, 20_000, after=[f], delay=2_500_000)      # 3: other part, 2.5us > L
    sim.add_flow(1, 3, 20_000, after=[f])                       # 4: other part, no delay
    c = sim.add_compute(2, "3us", after=[f])                    # 5: on host 2 (part 1)
    sim.add_flow(1, 0, 20_000, after=[c], delay=100)            # 6: other part, after the step
    g = sim.add_flow(2, 3, 1_000, after=[f])                    # 7: completes on host 3 (part 1)
    h = sim.add_flow(3, 0, 1_000, start=9_000_000)              # 8: completes on host 0 (part 0)
    sim.add_flow(0, 1, 10_000, after=[g, h], delay=700)         # 9: parents in both parts
    k = sim.add_flow(3, 1, 1_000)                               # 10: completes on host 1 (part 0)
    sim.add_flow(1, 0, 10_000, after=[k, g], delay=700)         # 11: the same, the other one later
    core = sim.build_core()
    return core


def test_a_dependency_across_parts_waits_for_the_lookahead():
    """Closed form on two parts: a child in the parent's part starts `delay` after it (as
    in one part); a child in another part starts max(delay, L) after it."""
    cores = {p: dumbbell_core(p) for p in ("none", "leaves")}
    res = {}
    for p, core in cores.items():
        assert core.run(10**12) == engine.STOP_EMPTY
        res[p] = core.flow_arrays()
        assert (res[p]["state"] == FS_DONE).all() and core.stats()["time_errors"] == 0
    core = cores["leaves"]
    assert core.n_parts == 2 and core.window_stats()["lookahead_ps"] == L_PS
    start, done, rx = res["leaves"]["start_ps"], res["leaves"]["finish_ps"], res["leaves"]["rx_finish_ps"]
    t = rx[0]                                       # flow 0's last byte at host 2
    assert t == res["none"]["rx_finish_ps"][0]        # (an idle network: as in one part)
    assert start[1] == t + 300
    assert start[2] == t + L_PS
    assert start[3] == t + 2_500_000
    assert start[4] == t + L_PS
    assert start[5] == t and done[5] == t + 3_000_000
    assert start[6] == done[5] + L_PS
    assert start[9] == max(rx[7] + L_PS, rx[8] + 700)
    assert rx[8] + 700 > rx[7] + L_PS               # (the part's own parent is the later one)
    assert start[11] == rx[7] + L_PS > rx[10] + 700  # (the other part's is)
    # one part: every child `delay` after its last parent
    one = res["none"]
    for child, parent, delay in ((1, 0, 300), (2, 0, 300), (3, 0, 2_500_000), (4, 0, 0), (6, 5, 100)):
        assert one["start_ps"][child] == one["rx_finish_ps"][parent] + delay


@pytest.mark.parametrize("level", LEVELS)
def test_dependencies_across_parts_do_not_depend_on_the_order_parts_run_in(level):
    """Collectives whose dependencies cross parts (a quarter of the edges at leaves): the
    same readbacks mid-run and at the end, whatever order the parts run in; every flow
    done with its bytes, nothing left; every crossing edge was one message."""
    sim = collectives_fat_tree(level)
    crossing = sim.dependency_crossing(sim.partition(level))
    assert crossing > 0.1
    cores = []
    for order in [("forward", 0)] + ORDERS:
        core = collectives_fat_tree(level).build_core()
        debug.part_order(core, *order)
        assert core.run(40 * 10**6 + 777) == engine.STOP_TIME
        cores.append(core)
    mid = readbacks(cores[0])
    assert mid["in_use"] > 0 and 0 < (mid["flows"]["state"] == FS_DONE).sum() < sim.n_nodes
    for c in cores[1:]:
        assert_same(mid, readbacks(c))
    end = run_to_the_end_alike(cores, 10**13)
    st, fl = end["stats"], end["flows"]
    sizes = sim.flow_column("size")
    data = sim.flow_column("compute") == 0
    assert (fl["state"] == FS_DONE).all()
    np.testing.assert_array_equal(fl["delivered_bytes"][data], sizes[data])
    assert st["data_bytes_delivered"] == sizes[data].sum()
    assert st["time_errors"] == 0 and st["packets_in_use"] == 0 and st["pending_events"] == 0
    assert debug.receive_records_in_use(cores[0]) == 0
    done, start = sim.dependency_hosts()
    part = sim.partition(level).part_of_node
    assert cores[0].window_stats()["dependency_messages"] == np.count_nonzero(part[done] != part[start])


def test_a_run_in_parts_refuses_flow_mode_and_unknown_levels():
    """Flow mode runs in one part; the levels are those of the partition."""
    t = topology.fat_tree(4, "100Gbps", "1us")
    with pytest.raises(ScenarioError, match="flow mode runs in one part") as e:
        Simulation(t, partition="leaves", mode="flow")
    assert e.value.key == "mode"
    with pytest.raises(ScenarioError, match="must be one of auto, none, leaves, pods; got 'servers'") as e:
        Simulation(t, partition="servers")
    assert e.value.key == "partition"
    core = pfc_fat_tree("leaves").build_core()
    with pytest.raises(ValueError, match="forward, reverse or shuffle"):
        debug.part_order(core, "sideways")
