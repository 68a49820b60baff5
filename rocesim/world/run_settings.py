"""A simulation's settings, resolved once against their declarations (`rocesim.config`, the
scheme's parameters, NCCL's): unknown keys, wrong types and values out of range stop here
with the key path, for YAML and the Python API alike, before anything is built."""
from __future__ import annotations

from dataclasses import dataclass

from rocesim import config, lb
from rocesim.cc import calibration, get_scheme
from rocesim.cc.scheme import Scheme
from rocesim.training.nccl import NcclConfig


@dataclass(frozen=True)
class RunSettings:
    """Every setting of a simulation, resolved (defaults filled in, units parsed)."""

    seed: int
    mode: str                # "packet" or "flow"
    partition: str           # as given ('auto' kept: `network.partition.run_parts` resolves it)
    scheme: Scheme
    cc_params: dict          # the scheme's parameters as given and defaulted ('auto' kept)
    switch: dict
    nic: dict                # the scheme's NIC defaults under the ones given
    deadlock: dict
    nccl: NcclConfig         # how the nccl_* algorithms behave ('auto' pipeline: what the mode runs best)
    fluid_calibration: dict  # the flow mode's calibration (`flow:`): {share, startup (ps), source: {share, startup}}

    @classmethod
    def resolve(cls, *, switch=None, nic=None, cc="none", cc_params=None, seed=1, deadlock=None, nccl=None,
                mode="packet", flow=None, partition="auto") -> "RunSettings":
        """The settings as `Simulation(...)` takes them, resolved in the order a user reads
        them; what `mode: flow` cannot run is refused here."""
        seed = config.SEED.parse(seed, "seed")
        mode = config.MODE.parse(mode, "mode")
        partition = config.PARTITION.parse(partition, "partition")
        scheme = get_scheme(cc)
        cc_params = scheme.resolve_params(cc_params)
        switch = config.SWITCH.resolve(switch, "switch")
        if isinstance(nic, dict) or nic is None:      # the scheme's NIC defaults, unless set
            nic = {**scheme.nic_defaults(cc_params), **(nic or {})}
        nic = config.NIC.resolve(nic, "nic")
        deadlock = config.resolve_deadlock(deadlock)
        nccl = NcclConfig.resolve(nccl, "nccl", mode)
        # what mode: flow cannot run, refused before anything is built
        if scheme.py_class is not None:
            config.refuse_in_flow_mode(mode, "cc.scheme", f"{scheme.name} is written in Python")
        if deadlock["enabled"]:
            config.refuse_in_flow_mode(mode, "deadlock", "deadlock detection is on")
        if switch["pfc"]["watchdog"]["enabled"]:
            config.refuse_in_flow_mode(mode, "switch.pfc.watchdog.enabled", "the PFC watchdog is on")
        if switch["trimming"]["enabled"]:
            config.refuse_in_flow_mode(mode, "switch.trimming.enabled", "packet trimming is on")
        config.check_nic_switch(nic, switch)
        fluid = calibration.resolved(config.FLOW.resolve(flow, "flow"), mode, scheme.name)
        return cls(seed=seed, mode=mode, partition=partition, scheme=scheme, cc_params=cc_params, switch=switch,
                   nic=nic, deadlock=deadlock, nccl=nccl, fluid_calibration=fluid)

    @property
    def fluid_load_balancing(self) -> str | None:
        """In flow mode, how the fluid approximates the load-balancing schemes and the sender's
        entropy (rocesim.lb.fluid_approximation); None when it routes exactly as the packets
        go (ECMP everywhere, no entropy) and in packet mode."""
        if self.mode != "flow":
            return None
        return lb.fluid_approximation(self.switch["load_balancing"], self.nic["entropy_every"])

    @property
    def python_scheme(self) -> bool:
        """Whether the congestion-control scheme is written in Python (it runs on one thread)."""
        return self.scheme.py_class is not None
