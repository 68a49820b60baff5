"""The core's parameters come from one table (rocesim/_core/params.py): each row names the
setting, the C field of `NetParams` and the conversion; the core refuses a value out of its
row's range, naming the row, and a struct that lacks a row."""
import pytest

from rocesim import Simulation, config, topology
from rocesim._core import params


def resolved(nic=None, switch=None, needs_int=False, mode="packet", flow=None):
    """The core's parameters for the given settings (the defaults elsewhere)."""
    return params.core_params(seed=1, nic=config.NIC.resolve(nic, "nic"), switch=config.SWITCH.resolve(switch, "switch"),
                              needs_int=needs_int, mode=mode, flow=flow or {"share": 1.0, "startup": 0},
                              multipath_into_ordered=False)


def test_a_setting_keeps_its_name_down_to_c():
    p = resolved(nic={"payload": "1500B", "header": "52B", "ack_size": "64B"})
    assert (p["payload"], p["header"], p["ack_size"]) == (1500, 52, 64)
    assert not {"mtu", "data_hdr", "ack_bytes"} & set(p)


def test_each_row_converts_its_setting():
    p = resolved(nic={"loss_recovery": "selective_repeat", "serialization": "whole_ns", "ack_high_priority": True},
                 switch={"pfc": {"priorities": [3], "threshold": "100KB", "bounce_priority": "next"}})
    assert p["loss_recovery"] == params.LOSS_RECOVERY.index("selective_repeat") == 1
    assert (p["tx_quantum"], p["ack_high_priority"], p["bounce_priority"]) == (1000, 1, -1)
    assert (p["pfc_dynamic"], p["pfc_threshold"], p["pfc_mask"]) == (0, 100_000, 1 << 3)
    assert p["rto"] == params.AUTO_RTO and p["rto_mask"] == 0xFF & ~(1 << 3)     # lossy priorities only
    assert p["ack_int_size"] == max(p["ack_size"], params.ACK_HEADERS + p["int_header"])
    assert resolved(switch={"ecn": {"enabled": False}})["ecn_mask"] == 0


def test_a_value_out_of_its_rows_range_is_refused_naming_it():
    p = resolved()
    params.check(p)
    for name, bad in (("ttl", 0), ("ack_every", 256), ("bounce_priority", 8), ("fluid_share", 0.0)):
        with pytest.raises(ValueError, match=f"core params: {name} must be"):
            params.check({**p, name: bad})


def test_a_struct_without_a_row_is_refused():
    with pytest.raises(ValueError, match="have no field in NetParams"):
        params.check_fields({"payload": 1000})


def test_every_row_reaches_the_core():
    """Core fills NetParams by name: a run builds it from every row (Cython refuses a field
    without a row, check_fields a row without a field)."""
    sim = Simulation(topology.star(3, "100Gbps", "1us"), nic={"payload": "500B"})
    sim.add_flow(1, 2, 1500)
    res = sim.run(progress=False)
    assert res.summary["data_packets_sent"] == 3
