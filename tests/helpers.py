"""Set-up shared by the test folders: paths, small topologies and scenarios, closed forms."""
import json
from pathlib import Path

import pytest
import yaml

from rocesim import Simulation
from rocesim import scenario as sc
from rocesim.cli import main
from rocesim.errors import ScenarioError
from rocesim.network import topology
from rocesim.results.run import MACHINE_KEYS

TESTS = Path(__file__).resolve().parent      # this folder: helpers.py, pyschemes.py, chakra_writer.py
ROOT = TESTS.parent                          # the repository

HDR, MTU, ACK = 48, 1000, 60

# the smallest scenario file a command runs: a 3-to-1 incast of 100 KB on a star, no figures
TINY = """
topology: {kind: star, hosts: 4, link: {rate: 100Gbps, delay: 1us}}
traffic: [{kind: incast, senders: [1, 2, 3], receiver: 0, size: 100KB}]
output: {plot: false}
"""
LINK = {"rate": "100Gbps", "delay": "1us"}
# the start of a scenario on 2 servers of 4 GPUs, rail-optimized (a workload entry follows)
TWO_SERVERS = """
topology:
  kind: rail_optimized
  servers: 2
  gpus_per_server: 4
  nic_link: {rate: 100Gbps, delay: 1us}
  scale_up: {rate: 800Gbps, delay: 1us}
nic: {payload: 4000B}
"""


def small_scenario(**top):
    """A tiny valid scenario (a mapping): 4 hosts on one switch (node 4), a 2-to-1 incast of
    10 KB; `top` replaces its top-level keys."""
    raw = {"seed": 1, "topology": {"kind": "star", "hosts": 4, "link": dict(LINK)},
           "traffic": [{"kind": "incast", "senders": [1, 2], "receiver": 0, "size": "10KB"}]}
    raw.update(top)
    return raw


def scenario_error(raw, base_dir=".") -> ScenarioError:
    """The ScenarioError that building the scenario `raw` raises (it must raise one)."""
    with pytest.raises(ScenarioError) as info:
        sc.build(raw, str(base_dir))
    return info.value


def cli_error(capsys, *argv) -> str:
    """What `rocesim ARGV` prints when it refuses: exit 2 and one line `rocesim: error: ...`."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("rocesim: error: ") and err.count("\n") == 1, err
    return err


def write_scenario(tmp_path, raw, name="s.yaml") -> str:
    """A scenario file tmp_path/name holding `raw` (a mapping, or the file's text); its path."""
    path = tmp_path / name
    path.write_text(raw if isinstance(raw, str) else yaml.safe_dump(raw, sort_keys=False))
    return str(path)


def write_file(tmp_path, name, data: bytes) -> str:
    """`data` written as tmp_path/name; its path."""
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def ser_ps(nbytes, rate_bps):
    """Serialization time in ps, rounded up (the core's convention)."""
    return -(-nbytes * 8 * 10**12 // rate_bps)


def wire_bytes(size):
    """Bytes on the wire for a flow of `size` payload bytes (default MTU and headers)."""
    n = -(-size // MTU)
    return size + n * HDR


def assert_every_byte_once(res):
    """Every flow of run `res` finished with each of its bytes delivered once, and no packet
    is left in the pools."""
    s, f = res.summary, res.flows
    assert s["flows_completed"] == s["flows_total"]
    assert list(f["delivered_bytes"]) == list(f["size_bytes"])
    assert s["data_bytes_delivered"] == f["size_bytes"].sum()
    assert s["packets_in_use_at_end"] == 0


def written_outputs(res, folder):
    """What run `res` writes into `folder`: its CSV files' bytes, and summary.json without
    the machine's keys (time, speed and the threads that ran: they differ between reruns)."""
    res.write(folder)
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix == ".csv"}
    summary = json.loads((folder / "summary.json").read_text())
    for k in MACHINE_KEYS:
        summary.pop(k)
    return files, summary


def lossy_incast(n, loss_recovery, buffer="100KB", size=1_000_000, cc="none", switch=None, nic=None):
    """A lossy incast (no PFC, a small buffer), run: n senders on 40G links into one 100G
    receiver link (2.5G per sender over), one flow each, staggered so that drops interleave;
    `switch` and `nic` add settings."""
    t = topology.Topology(n + 1)
    s = t.add_switch()
    t.add_link(0, s, "100Gbps", "1us")
    for h in range(1, n + 1):
        t.add_link(h, s, "40Gbps", "1us")
    sim = Simulation(t, cc=cc, switch={"buffer": buffer, "pfc": {"enabled": False}, **(switch or {})},
                     nic={"loss_recovery": loss_recovery, "rto": "100us", **(nic or {})})
    for h in range(1, n + 1):
        sim.add_flow(h, 0, size, start=h * 17_123)    # staggered: drops interleave
    return sim.run()


def two_switch_loop():
    """Host 0 - switch 2 - switch 3 - host 1: a line that routes can turn into a loop."""
    t = topology.Topology(2)
    a, b = t.add_switch(), t.add_switch()
    t.add_link(0, a, "100Gbps", "1us")
    t.add_link(1, b, "100Gbps", "1us")
    t.add_link(a, b, "100Gbps", "1us")
    return t, a, b


def loop_routes(a, b):
    """Routes that send what is for host 1 from switch a to b and from b back to a."""
    return [{"switch": a, "dst": 1, "next": b}, {"switch": b, "dst": 1, "next": a}]


def switch_ring(n):
    """n switches in a ring (switch n + i linked to n + i + 1), host i on switch n + i."""
    t = topology.Topology(n)
    sw = t.add_switches(n)
    for h in range(n):
        t.add_link(h, sw[h], "100Gbps", "1us")
    for i in range(n):
        t.add_link(sw[i], sw[(i + 1) % n], "100Gbps", "1us")
    return t


def same_rocesim_env():
    """Environment for a subprocess that must import the rocesim these tests import (a
    built worktree, or the installed package in CI), whatever its working folder."""
    import os

    import rocesim
    here = os.path.dirname(os.path.dirname(os.path.abspath(rocesim.__file__)))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))


def interrupt_on_slice(n, slices):
    """A stand-in for `RunProgress.update` that records each slice's event count in
    `slices` and raises KeyboardInterrupt (Ctrl-C) at the n-th slice."""
    def update(progress, st):
        slices.append(st["events"])
        if len(slices) == n:
            raise KeyboardInterrupt
    return update
