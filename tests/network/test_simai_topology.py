"""SimAI topology files (gen_Topo_Template.py's format): the same platform as the equivalent
rail_optimized one (node for node, and the same collective durations), and errors keyed
file:line."""
import os

import numpy as np
import pytest

from rocesim import ScenarioError, Simulation
from rocesim.network import platform as pf
from rocesim.network.simai_topology import read_simai_topology
from rocesim.scenario.topology_kinds import build_platform

NIC, NIC_DELAY, NVLINK, NV_DELAY = "400Gbps", "0.0005ms", "2880Gbps", "0.000025ms"
REF_TOPO = os.path.join(os.path.dirname(__file__), "..", "..", "validation", "reference", "simai", "topo",
                        "Spectrum-X_64g_8gps_400Gbps_H100")


def spectrum_x(servers, gpus, spines, nv_per_server=1):
    """The lines SimAI's Spectrum-X template writes: GPUs, NVSwitches, one leaf per rail
    (ASW), spines (PSW); each GPU to its server's NVSwitches and its rail's leaf, every leaf
    to every spine."""
    n = servers * gpus
    nv = list(range(n, n + servers * nv_per_server))
    asw = list(range(nv[-1] + 1, nv[-1] + 1 + gpus))
    psw = list(range(asw[-1] + 1, asw[-1] + 1 + spines))
    links = []
    for g in range(n):
        s = g // gpus
        links += [f"{g} {nv[s * nv_per_server + k]} {NVLINK} {NV_DELAY} 0" for k in range(nv_per_server)]
        links.append(f"{g} {asw[g % gpus]} {NIC} {NIC_DELAY} 0")
    links += [f"{a} {p} {NIC} {NIC_DELAY} 0" for a in asw for p in psw]
    head = f"{psw[-1] + 1} {gpus} {len(nv)} {len(asw) + len(psw)} {len(links)} H100"
    return [head, " ".join(map(str, nv + asw + psw))] + links


def write(tmp_path, lines, name="topo.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def equivalent(servers, gpus, spines):
    return pf.rail_optimized(servers, gpus, NIC, NIC_DELAY, pf.ScaleUp(2880 * 10**9, 2 * 25_000), spines=spines)


def same_topology(a, b):
    ta, tb = a.topology, b.topology
    assert (ta.n_hosts, ta.n_switches) == (tb.n_hosts, tb.n_switches)
    for f in ("link_a", "link_b", "rate_ab", "rate_ba", "delay_ab", "delay_ba"):
        assert np.array_equal(getattr(ta, f), getattr(tb, f)), f
    assert (a.servers, a.gpus_per_server, a.nics_per_server, a.scale_up, a.pods, a.uplink_share) == \
        (b.servers, b.gpus_per_server, b.nics_per_server, b.scale_up, b.pods, b.uplink_share)


@pytest.mark.parametrize("servers, gpus, spines", [(2, 4, 2), (4, 2, 3), (3, 4, 1)])
def test_simai_file_is_the_rail_optimized_platform(tmp_path, servers, gpus, spines):
    same_topology(read_simai_topology(write(tmp_path, spectrum_x(servers, gpus, spines))),
                  equivalent(servers, gpus, spines))


def test_simai_generators_own_file_is_rail_optimized():
    """SimAI's generator's output (validation/reference/simai/topo, README there): 8 x 8 H100s."""
    p = read_simai_topology(REF_TOPO)
    same_topology(p, equivalent(8, 8, 64))
    assert p.notes["gpu type"] == "H100"


@pytest.mark.parametrize("op, ranks", [("allreduce", [0, 4, 8, 12]),       # DP: one GPU per server, one rail
                                       ("allreduce", [1, 6, 11, 12]),      # across servers and rails
                                       ("allreduce", [4, 5, 6, 7]),        # TP: one server
                                       ("alltoall", list(range(8)))])
def test_collectives_take_the_same_time_on_both(tmp_path, op, ranks):
    durations = []
    for platform in (read_simai_topology(write(tmp_path, spectrum_x(4, 4, 2))), equivalent(4, 4, 2)):
        sim = Simulation(platform, cc="dcqcn")
        sim.add_collective(op, None, ranks, "4MB", chunks=2)
        res = sim.run()
        durations.append(res.collectives["duration_ns"].tolist())
    assert durations[0] == durations[1] and durations[0][0] > 0


def test_several_nvswitches_per_server_add_up(tmp_path):
    p = read_simai_topology(write(tmp_path, spectrum_x(2, 4, 2, nv_per_server=2)))
    assert p.scale_up.rate_bps == 2 * 2880 * 10**9 and p.notes["NVSwitches"] == 4


def test_scenario_kind(tmp_path):
    write(tmp_path, spectrum_x(2, 4, 2), "t.txt")
    p = build_platform({"kind": "simai_file", "path": "t.txt"}, str(tmp_path))
    same_topology(p, equivalent(2, 4, 2))
    with pytest.raises(ScenarioError) as info:
        build_platform({"kind": "simai_file", "path": "missing.txt"}, str(tmp_path))
    assert info.value.key == "topology.path" and "missing.txt" in info.value.reason


def edit(lines, index, new):
    out = list(lines)
    out[index] = new
    return out


@pytest.mark.parametrize("change, line, words", [
    (lambda ls: edit(ls, 0, ls[0].replace(" 2 6 ", " 3 6 ")), 1, "do not make servers"),   # NVSwitch count
    (lambda ls: edit(ls, 0, "16 4 1 7 24 H100"), 1, "1 NVSwitches for 2 servers"),
    (lambda ls: ls[:-1], 25, "declares 24 links but the file has 23"),                          # truncated
    (lambda ls: ls[:1], 1, "line 2 must list the 8 switch ids"),
    (lambda ls: edit(ls, 2, ls[2].replace(" 8 ", " 9 ")), 3, "NVSwitch 9 of server 1"),
    (lambda ls: edit(ls, 4, "0 11 400Gbps 0.0005ms 0"), 5, "second network link"),
    (lambda ls: edit(ls, 3, "0 10 400Gbps 0.0005ms 0.01"), 4, "error rate"),
    (lambda ls: edit(ls, 3, "0 1 400Gbps 0.0005ms 0"), 4, "linked directly"),
])
def test_malformed_topology_names_file_and_line(tmp_path, change, line, words):
    lines = change(spectrum_x(2, 4, 2))
    path = write(tmp_path, lines)
    with pytest.raises(ScenarioError) as info:
        read_simai_topology(path)
    assert info.value.key == f"{path}:{line}" and words in info.value.reason
