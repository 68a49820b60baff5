"""How DCQCN's notification point changes a persistent incast.

Eight 20 MB flows into one 100G port, DCQCN, sampled every 10 us, three ways congestion
reaches the senders:

* `notify: ack` (preset `mellanox`, the default): every ACK of a CE-marked packet is a CNP,
  as in the HPCC ns-3 fork (its receiver flags ACKs; nothing limits how often);
* `notify: cnp` with `nic.cnp_interval: 4us`: CNP packets at most once per 4 us per flow
  (rocesim's model before it followed the fork), so at most one 1 us alpha period in four
  sees a CNP and alpha settles near g / (1 - (1-g)^4), about 0.25, instead of near 1;
* preset `paper`: the SIGCOMM 2015 notification point, a CNP at most once per 50 us.

    python validation/dcqcn_notification.py

prints the bottleneck queue (mean, p99) and the senders' rates between 2 and 12 ms.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from rocesim import Simulation, topology  # noqa: E402

VARIANTS = {
    "mellanox, notify: ack (the fork's)": ({}, None),
    "mellanox, CNP packets <= 1 per 4us": ({"notify": "cnp"}, {"cnp_interval": "4us"}),
    "paper (CNP packets <= 1 per 50us)": ({"preset": "paper"}, None),
}


def run(params, nic):
    sim = Simulation(topology.star(9, "100Gbps", "1us"), cc="dcqcn", cc_params=params, nic=nic)
    for h in range(1, 9):
        sim.add_flow(h, 0, "20MB")
    res = sim.run(progress=False, sample_interval="10us")
    q, r = res.samples["queues"], res.samples["rates"]
    bottleneck = int(np.flatnonzero(res.ports["peer_node"] == 0)[0])
    window = (q["time_ns"] > 2e6) & (q["time_ns"] < 12e6) & (q["port"] == bottleneck)
    rates = r["rate_bps"][(r["time_ns"] > 2e6) & (r["time_ns"] < 12e6)]
    return q["queue_bytes"][window], rates, res.summary


def main():
    print(f"{'variant':38s} {'queue mean':>10s} {'queue p99':>10s} {'rate mean':>10s} {'rate min':>9s} {'CNPs':>6s}")
    for name, (params, nic) in VARIANTS.items():
        queue, rates, s = run(params, nic)
        print(f"{name:38s} {queue.mean() / 1e3:8.0f}KB {np.percentile(queue, 99) / 1e3:8.0f}KB "
              f"{rates.mean() / 1e9:8.2f}G {rates.min() / 1e9:8.2f}G {s['cnps']:6d}")


if __name__ == "__main__":
    main()
