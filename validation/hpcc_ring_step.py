"""One step of a ring collective under every scheme: why HPCC's iterations are longer.

Every host of a 16-host leaf-spine (100G, 1 us links) sends 4 MB to the next one at once,
as in one step of a ring all-reduce, in an otherwise idle network.  HPCC keeps each link
at eta = 95% of its rate and adds 42 B of INT to every data packet (Li et al., SIGCOMM
2019; the HPCC ns-3 fork's defaults), so a step takes about 1/0.95 x 1090/1048 = 1.09x as
long as under the schemes that run at line rate when nothing is congested.

    python validation/hpcc_ring_step.py
"""
import numpy as np

from rocesim import Simulation, topology
from rocesim.cc import builtin_schemes


def ring_step_us(scheme: str, size: str = "4MB") -> float:
    topo = topology.leaf_spine(4, 2, 4, "100Gbps", "1us", "100Gbps", "1us")
    sim = Simulation(topo, cc=scheme, seed=1)
    for h in range(topo.n_hosts):
        sim.add_flow(h, (h + 1) % topo.n_hosts, size)
    return float(np.max(sim.run().flows["fct_ns"])) / 1e3


if __name__ == "__main__":
    print("| scheme | 4 MB ring step, 16 hosts at 100G (us) |\n|---|---|")
    for name in builtin_schemes():
        print(f"| {name} | {ring_step_us(name):.0f} |")
