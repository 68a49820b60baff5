"""validation/compare.py sets rocesim up with the HPCC fork's wire format per scheme."""
import importlib.util
import os

import pytest

from rocesim import scenario

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _compare():
    spec = importlib.util.spec_from_file_location("compare", os.path.join(ROOT, "validation", "compare.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name, header", [("timely", 44), ("dcqcn", 36), ("dctcp", 36)])
def test_fork_setup_data_frame(name, header):
    """One 1000 B packet across one switch (100 Gb/s, 1 us links) and its 48 B ACK back:
    store and forward, the idle FCT is 2 x (frame + ACK) serializations + 4 link delays,
    with the fork's data frame: 36 B of headers, plus its 8 B timestamp under TIMELY."""
    raw = {"topology": {"kind": "star", "hosts": 2, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "1000B"}]}],
           **_compare().fork_setup(name)}
    res = scenario.build(raw).sim.run(progress=False)
    ser_ns = lambda b: b * 8 / 100.0                              # ns at 100 Gb/s
    expect = 2 * ser_ns(1000 + header) + 2 * ser_ns(48) + 4000.0
    assert res.flows["ideal_fct_ns"][0] == pytest.approx(expect, abs=0.01)
    assert res.flows["fct_ns"][0] == pytest.approx(expect, abs=0.01)
