"""Load balancing at the switches: how a switch picks among equal-cost ports.

    from rocesim.lb import builtin_balancers, resolve

Built-in schemes live in the core, one file each (`rocesim/_core/lb_<name>.pyx`: the choice
and its declaration); `registry` finds them, as `rocesim.cc` finds congestion-control schemes.
"""
from rocesim.lb.registry import (Balancer, builtin_balancers, fluid_approximation, fluid_split_switches, get_balancer,
                                 resolve)

__all__ = ["Balancer", "builtin_balancers", "fluid_approximation", "fluid_split_switches", "get_balancer", "resolve"]
