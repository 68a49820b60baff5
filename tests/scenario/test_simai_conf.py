"""SimAI.conf (SimAI 1.6's ns-3 settings) read into rocesim's nic, switch and cc sections."""
import os

import numpy as np
import pytest
import yaml

from helpers import small_scenario
from rocesim import scenario as sc
from rocesim.cli import main
from rocesim.errors import ScenarioError
from rocesim.scenario.simai_conf import read_simai_conf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIMAI_CONF = os.path.join(ROOT, "validation", "reference", "simai", "SimAI.conf")
FORK = os.path.join(ROOT, "validation", "reference", "incast8")
RATES = ("25Gbps", "50Gbps", "100Gbps", "200Gbps", "400Gbps", "1.6Tbps")


def conf_keys(path):
    with open(path) as f:
        return [line.split()[0] for line in f if line.split()]


def test_simai_conf_maps_to_rocesim_values():
    """SimAI 1.6's published SimAI.conf, key by key (common.h ReadConf's units)."""
    sections, _ = read_simai_conf(SIMAI_CONF)
    assert sections["nic"] == {"payload": "9000B", "ack_every": 1, "loss_recovery": "go_back_n",
                               "ack_high_priority": False}
    assert sections["switch"] == {
        "buffer": "32MiB",                                  # BUFFER_SIZE 32: x 1024 x 1024 bytes
        "ecn": {"enabled": True,
                "kmin": dict(zip(RATES, ("100KB", "200KB", "400KB", "300KB", "800KB", "600KB"))),
                "kmax": dict(zip(RATES, ("400KB", "800KB", "1600KB", "1200KB", "3200KB", "2400KB"))),
                "pmax": dict(zip(RATES, (0.2, 0.2, 0.2, 0.8, 0.2, 0.2)))},
        "pfc": {"threshold": "dynamic"}}
    assert sections["cc"] == {"scheme": "dcqcn", "params": {
        "t_alpha": "1us", "t_dec": "4us", "t": "900us", "g": 0.00390625, "f": 1, "rai": "50Mbps",
        "rhai": "100Mbps", "min_rate": "100Mbps", "clamp": False, "window": "bdp", "preset": "mellanox"}}


def test_simai_conf_accounts_for_every_key():
    """Each key of the file is mapped or listed once with a reason; the mapped ones are not listed."""
    _, ignored = read_simai_conf(SIMAI_CONF)
    listed = [k for k, _ in ignored]
    assert len(listed) == len(set(listed)) and all(reason for _, reason in ignored)
    mapped = {"ENABLE_QCN", "USE_DYNAMIC_PFC_THRESHOLD", "PACKET_PAYLOAD_SIZE", "CC_MODE", "ALPHA_RESUME_INTERVAL",
              "RATE_DECREASE_INTERVAL", "CLAMP_TARGET_RATE", "RP_TIMER", "EWMA_GAIN", "FAST_RECOVERY_TIMES",
              "RATE_AI", "RATE_HAI", "MIN_RATE", "L2_ACK_INTERVAL", "L2_BACK_TO_ZERO", "HAS_WIN", "VAR_WIN",
              "ACK_HIGH_PRIO", "KMAX_MAP", "KMIN_MAP", "PMAX_MAP", "BUFFER_SIZE"}
    assert set(listed) == set(conf_keys(SIMAI_CONF)) - mapped
    reasons = dict(ignored)
    assert "output/monitoring" in reasons["FCT_OUTPUT_FILE"] and "output/monitoring" in reasons["QLEN_MON_FILE"]
    assert "CC_MODE 8" in reasons["DCTCP_RATE_AI"] and "CC_MODE 3" in reasons["U_TARGET"]
    assert reasons["LINK_DOWN"] == "0: no link failure"


@pytest.mark.parametrize("rate,kmin,kmax,pmax", [("200Gbps", 300_000, 1_200_000, 0.8),
                                                 ("400Gbps", 800_000, 3_200_000, 0.2)])
def test_simai_conf_sections_build_and_reach_the_ports(rate, kmin, kmax, pmax):
    """The sections are a valid scenario, and each port gets its rate's Kmin, Kmax and Pmax."""
    sections, _ = read_simai_conf(SIMAI_CONF)
    raw = small_scenario(**sections)
    raw["topology"]["link"]["rate"] = rate
    sim = sc.build(raw).sim
    assert sim.nic["payload"] == 9000 and sim.switch["buffer"] == 32 * 2**20
    ecn = sim.network.arrays
    assert np.all(ecn["port_kmin"] == kmin) and np.all(ecn["port_kmax"] == kmax)
    assert np.all(ecn["port_pmax"] == pmax)
    res = sim.run(progress=False)
    assert np.all(res.flows["size_bytes"] == 10_000) and not np.any(np.isnan(res.flows["fct_ns"]))


@pytest.mark.parametrize("name,scheme", [("dcqcn", "dcqcn"), ("dcqcn_win", "dcqcn"), ("hpcc", "hpcc"),
                                         ("timely", "timely"), ("dctcp", "dctcp")])
def test_hpcc_fork_configs_map_and_build(name, scheme):
    """The HPCC fork's own config files (same format) map to the scheme run.py ran, and build."""
    path = os.path.join(FORK, f"config_{name}.txt")
    sections, ignored = read_simai_conf(path)
    assert sections["cc"]["scheme"] == scheme
    assert {k for k, _ in ignored} <= set(conf_keys(path))
    raw = small_scenario(**sections)
    sc.build(raw).sim.check()
    reasons = dict(ignored)
    assert "does not read" in reasons["TOPOLOGY_FILE"] and "does not read" in reasons["QLEN_MON_START"]
    if name == "dcqcn_win":
        assert sections["cc"]["params"]["window"] == "bdp"
    if name == "hpcc":
        assert sections["cc"]["params"] == {"eta": 0.95, "max_stage": 0, "min_rate": "1Gbps"}
        assert "wai" in reasons["RATE_AI"]
    if name == "timely":
        assert sections["cc"]["params"] == {"delta": "100Mbps", "min_rate": "1Gbps"}
        assert reasons["RATE_HAI"].startswith("5 x RATE_AI")


def write(tmp_path, text):
    path = tmp_path / "SimAI.conf"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text,line,words", [
    ("CC_MODE 1\nBUFFER_SIZE thirty\n", 2, "BUFFER_SIZE must be an integer"),
    ("BUFFER_SIZE 32 64\n", 1, "takes 1 value"),
    ("\nKMIN_MAP 2 25000000000 100\n", 2, "count pairs"),
    ("PMAX_MAP 1 25000000000 1.5\n", 1, "probability"),
    ("KMAX_MAP 1 fast 400\n", 1, "port rate"),
    ("RATE_AI 50\n", 1, "ns-3 data rate"),
    ("RP_TIMER -3\n", 1, "at least 0"),
    ("CC_MODE 2\n", 1, "CC_MODE must be one of"),
    ("LINK_DOWN 5 1\n", 1, "takes 3 values"),
])
def test_simai_conf_errors_name_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        read_simai_conf(path)
    assert info.value.key == f"{path}:{line}" and words in info.value.reason


def test_simai_conf_value_dependent_keys(tmp_path):
    """Keys whose mapping depends on their value, on the payload, or on CC_MODE."""
    path = write(tmp_path, "PACKET_PAYLOAD_SIZE 1000\nL2_ACK_INTERVAL 4000\nCC_MODE 10\nU_TARGET 0.9\n"
                           "LINK_DOWN 100 3 7\nFOO 1\nBUFFER_SIZE 16\nBUFFER_SIZE 24\nHAS_WIN 1\n")
    sections, ignored = read_simai_conf(path)
    assert sections == {"nic": {"payload": "1000B", "ack_every": 4}, "switch": {"buffer": "24MiB"}}
    reasons = dict(ignored)
    assert "HPCC-PINT" in reasons["CC_MODE"] and "HPCC-PINT" in reasons["U_TARGET"]
    assert "HPCC-PINT" in reasons["HAS_WIN"]
    assert "link: [3, 7], at: 2.0001s" in reasons["LINK_DOWN"]
    assert reasons["FOO"] == "unknown to SimAI 1.6 (common.h ReadConf skips it)"
    assert "overridden by line 8" in reasons["BUFFER_SIZE"]
    path = write(tmp_path, "PACKET_PAYLOAD_SIZE 1000\nL2_ACK_INTERVAL 1500\nHAS_WIN 1\n")
    sections, ignored = read_simai_conf(path)
    assert sections == {"nic": {"payload": "1000B"}}     # a fixed window: nothing to map
    assert "1.5 packets" in dict(ignored)["L2_ACK_INTERVAL"] and "fixed" in dict(ignored)["HAS_WIN"]
    sections, _ = read_simai_conf(write(tmp_path, "RP_TIMER 55\n"))
    assert sections == {"cc": {"scheme": "dcqcn", "params": {"t": "55us", "preset": "mellanox"}}}  # SimAI's default


def test_simai_conf_command_prints_pasteable_yaml(capsys):
    """`rocesim simai-conf` prints YAML equal to the sections, the ignored keys as comments."""
    assert main(["simai-conf", SIMAI_CONF]) == 0
    out = capsys.readouterr().out
    sections, ignored = read_simai_conf(SIMAI_CONF)
    assert yaml.safe_load(out) == sections
    comments = [line for line in out.splitlines() if line.startswith("#   ")]
    assert comments == [f"#   {k}: {r}" for k, r in ignored]
