"""validation/compare.py sets rocesim up with the HPCC fork's wire format per scheme."""
import importlib.util
import os
import re
import sys

import pytest

from helpers import ROOT
from rocesim import scenario



def _compare():
    spec = importlib.util.spec_from_file_location("compare", os.path.join(ROOT, "validation", "compare.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name, header, ack", [("timely", 56, 60), ("dcqcn", 48, 60), ("dctcp", 48, 60),
                                               ("hpcc", 48 + 42, 88)])
def test_fork_setup_data_frame(name, header, ack):
    """One 1000 B packet across one switch (100 Gb/s, 1 us links) and its ACK back: store
    and forward, the idle FCT is 2 x (frame + ACK) serializations + 4 link delays, with the
    fork's frames (48 B of headers, its 8 B timestamp under TIMELY, 42 B of INT under HPCC;
    60 B ACKs, 88 B echoing INT), each serialization in whole ns as the fork has them; the
    ideal FCT keeps the exact serializations."""
    raw = {"topology": {"kind": "star", "hosts": 2, "link": {"rate": "100Gbps", "delay": "1us"}},
           "traffic": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "1000B"}]}],
           **_compare().fork_setup(name)}
    res = scenario.build(raw).sim.run(progress=False)
    ser_ns = lambda b: b * 8 / 100.0                              # ns at 100 Gb/s
    exact = 2 * ser_ns(1000 + header) + 2 * ser_ns(ack) + 4000.0
    whole = 2 * (ser_ns(1000 + header) // 1) + 2 * (ser_ns(ack) // 1) + 4000.0
    assert res.flows["ideal_fct_ns"][0] == pytest.approx(exact, abs=0.01)
    assert res.flows["fct_ns"][0] == pytest.approx(whole, abs=0.01)


# Flows alone in the fork's fat tree (validation/reference/websearch30/topology.txt), one at a
# time, and the FCT in ns the fork (commit 9f4be2a, the websearch30 config per scheme) wrote
# for each: intra-rack, intra-pod and cross-pod, 1 to 1000 packets.
IDLE_FLOWS = [(0, 300, 1000), (1, 301, 10000), (2, 302, 100000), (3, 303, 1000000),
              (4, 5, 1000), (5, 6, 100000), (10, 30, 1000), (11, 31, 100000)]
FORK_IDLE_FCT = {
    "dcqcn": [12258, 13005, 20475, 95175, 4174, 12391, 8216, 16433],
    "timely": [12264, 13020, 20580, 96180, 4176, 12492, 8220, 16536],
    # HPCC slows its larger flows below line rate even alone (U_TARGET 95 %): only those
    # that finish within the first RTT at line rate are set by the wire alone
    "hpcc": [12276, 13059, None, None, 4188, None, 8232, None],
}


@pytest.mark.parametrize("name", sorted(FORK_IDLE_FCT))
def test_fork_setup_idle_fct_to_the_ns(name):
    """With the fork's frames and whole-ns serialization, a flow alone in the fork's fat tree
    finishes at the very ns the fork's run has it finish."""
    flows = [{"src": s, "dst": d, "size": f"{b}B", "start": f"{i * 200}us"}
             for i, (s, d, b) in enumerate(IDLE_FLOWS)]
    raw = {"topology": {"kind": "hpcc_file", "path": "topology.txt"},
           "traffic": [{"kind": "flows", "flows": flows}], **_compare().fork_setup(name)}
    res = scenario.build(raw, base_dir=os.path.join(ROOT, "validation", "reference", "websearch30")).sim.run(progress=False)
    for i, want in enumerate(FORK_IDLE_FCT[name]):
        if want is not None:
            assert res.flows["fct_ns"][i] == pytest.approx(want, abs=0.001), IDLE_FLOWS[i]


# a stand-in for the fork's binary: it burns a little CPU and writes the FCT file its config
# names, the stored one (or its first `keep` lines)
STAND_IN = """#!{python}
import sys, time
end = time.process_time() + 0.05
while time.process_time() < end:
    pass
conf = dict(line.split(None, 1) for line in open(sys.argv[1]) if line.strip())
lines = open({stored!r}).readlines()[:{keep}]
open(conf["FCT_OUTPUT_FILE"].strip(), "w").writelines(lines)
"""


def _stand_in(tmp_path, keep=None):
    path = tmp_path / "third"
    path.write_text(STAND_IN.format(python=sys.executable, keep=keep,
                                    stored=os.path.join(ROOT, "validation", "reference", "incast8", "fct_dcqcn.txt")))
    path.chmod(0o755)
    return str(path)


def test_compare_shows_the_forks_cpu_only_when_measured_beside_rocesim(tmp_path):
    """Without a fork binary the stored CPU figure is marked with where and when it was made
    and no ratio is given; with one, the fork runs here (in the stored config's layout) and
    its CPU comes with the ratio to rocesim's; FCTs that differ from the stored are said."""
    compare = _compare()
    summary = []
    text = compare.compare_case("incast8", ["dcqcn"], 4, summary=summary)
    row = next(line for line in text.splitlines() if line.startswith("| dcqcn |"))
    assert re.search(r"\| 0\.37\\\* / \d+\.\d+ \| all \|", row) and "x)" not in row
    assert "measured 2026-11-23, on the machine this reference was made on" in text
    assert summary[0][5] is None and "CPU fork / rocesim" not in compare.summary_table(summary, 1)
    summary = []
    text = compare.compare_case("incast8", ["dcqcn"], 4, summary=summary, fork=_stand_in(tmp_path))
    row = next(line for line in text.splitlines() if line.startswith("| dcqcn |"))
    fork_cpu, cpu, ratio = re.search(r"\| (\d+\.\d+) / (\d+\.\d+) \((\d+)x\) \| all \|", row).groups()
    assert float(fork_cpu) >= 0.05 and f"{summary[0][5]:.0f}" == ratio
    assert "differ from the stored" not in text and "\\*" not in row
    assert re.fullmatch(r"\| incast8 \| dcqcn \|.* \| \d+x \|", compare.summary_table(summary, 1).splitlines()[-1])
    text = compare.compare_case("incast8", ["dcqcn"], 4, fork=_stand_in(tmp_path, keep=7))
    assert "dcqcn: the fork's FCTs here differ from the stored ones (7 flows against 8)" in text
    # the fork run for some schemes only: the others keep the stored figure, marked, without a ratio
    text = compare.compare_case("incast8", ["dcqcn", "dctcp"], 4, fork=_stand_in(tmp_path), fork_schemes=["dcqcn"])
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith(("| dcqcn |", "| dctcp |"))}
    assert re.search(r"\(\d+x\) \| all \|", rows["| dcqcn"]) and "\\*" not in rows["| dcqcn"]
    assert re.search(r"\| 0\.31\\\* / \d+\.\d+ \| all \|", rows["| dctcp"]) and "x)" not in rows["| dctcp"]
    assert "The fork ran here (dcqcn)" in text and "so no ratio (dctcp;" in text
