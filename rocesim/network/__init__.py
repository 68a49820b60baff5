"""The network: topologies (hosts, switches, links), multi-GPU platforms on them (servers,
scale-up domains, rail fabrics), routing (ECMP groups), ASTRA-sim network files as
platforms, and faults scheduled on links and NICs.

    from rocesim.network import topology, platform
"""
