"""Background traffic (rocesim.traffic): the flow table, the generators, HPCC flow files."""

import numpy as np
import pytest

from rocesim.errors import ScenarioError
from rocesim.network.topology import Topology, from_hpcc_file, star
from rocesim.traffic import (
    DEFAULT_DPORT,
    DEFAULT_FLOW_PRIORITY,
    FB_HADOOP,
    WEBSEARCH,
    FlowSizeCDF,
    FlowTable,
    explicit_flows,
    hpcc_flow_file,
    incast,
    permutation,
    poisson_cdf,
    write_hpcc_flow_file,
)

US = 10**6
SECOND = 10**12


def table(src, dst, size=1000, start=0, **extra):
    n = len(src)
    return FlowTable(
        src,
        dst,
        np.full(n, size) if np.ndim(size) == 0 else size,
        np.full(n, start) if np.ndim(start) == 0 else start,
        **extra,
    )


# --- FlowTable ----------------------------------------------------------------------


def test_flow_table_dtypes_and_defaults():
    flows = table([0, 1], [1, 0], size=[10, 20], start=[5, 6])
    assert len(flows) == 2
    assert flows.src.dtype == np.int32 and flows.dst.dtype == np.int32
    assert flows.size.dtype == np.int64 and flows.start.dtype == np.int64
    assert flows.prio.dtype == np.uint8 and flows.prio.tolist() == [DEFAULT_FLOW_PRIORITY] * 2
    assert flows.dport.dtype == np.int32 and flows.dport.tolist() == [DEFAULT_DPORT] * 2
    assert flows.tag.dtype == np.int32 and flows.tag.tolist() == [0, 0]
    assert table([0], [1], prio=5, tag=[7]).prio.tolist() == [5]


def test_flow_table_rejects_bad_columns():
    with pytest.raises(ScenarioError, match="flows.dst: has 1 entries but src has 2"):
        FlowTable([0, 1], [1], [1, 1], [0, 0])
    with pytest.raises(ScenarioError, match="flows.size: values must be integers"):
        FlowTable([0], [1], [1.5], [0])
    with pytest.raises(ScenarioError, match="flows.prio: values 300..300 do not fit uint8"):
        table([0], [1], prio=300)
    with pytest.raises(ScenarioError, match="flows.src: expected a 1-D sequence"):
        FlowTable([[0]], [[1]], [[1]], [[0]])
    # whole-valued floats are fine
    assert FlowTable([0.0], [1.0], [1e6], [0.0]).size.tolist() == [10**6]


def test_empty_concat_and_tags():
    assert len(FlowTable.empty()) == 0
    assert len(FlowTable.concat([])) == 0
    a = table([0, 1], [1, 0]).with_tag(1)
    b = table([2], [3], prio=1).with_tag(2)
    both = FlowTable.concat([a, FlowTable.empty(), b])
    assert both.src.tolist() == [0, 1, 2]
    assert both.tag.tolist() == [1, 1, 2]
    assert both.prio.tolist() == [3, 3, 1]
    assert both.tag.dtype == np.int32


def test_sorted_by_start_is_stable():
    flows = table([0, 1, 2, 3], [1, 2, 3, 0], start=[30, 10, 30, 10])
    ordered = flows.sorted_by_start()
    assert ordered.start.tolist() == [10, 10, 30, 30]
    assert ordered.src.tolist() == [1, 3, 0, 2]
    assert flows.src.tolist() == [0, 1, 2, 3]  # original untouched


def test_equals_and_take():
    flows = table([0, 1, 2], [1, 2, 0], size=[1, 2, 3])
    assert flows.equals(table([0, 1, 2], [1, 2, 0], size=[1, 2, 3]))
    assert not flows.equals(table([0, 1, 2], [1, 2, 0], size=[1, 2, 4]))
    assert flows.take(np.array([2, 0])).size.tolist() == [3, 1]
    assert flows.take(flows.size > 1).src.tolist() == [1, 2]


@pytest.mark.parametrize(
    "flows, message",
    [
        (table([0, 9], [1, 0]), "flow 1 (tag 0): src 9 is not a host; hosts are 0..3"),
        (table([0], [-1]), "flow 0 (tag 0): dst -1 is not a host"),
        (table([0, 2], [1, 2], tag=5), "flow 1 (tag 5): src and dst are both 2"),
        (table([0], [1], size=0), "flow 0 (tag 0): size 0 B must be at least 1 byte"),
        (table([0], [1], start=-5), "flow 0 (tag 0): start -5 ps must not be negative"),
    ],
)
def test_validate_errors(flows, message):
    with pytest.raises(ScenarioError) as info:
        flows.validate(4, key="traffic[0]")
    assert str(info.value).startswith(f"traffic[0]: {message}")


def test_validate_accepts_good_table():
    table([0, 1, 2], [3, 0, 1]).validate(4)


# --- explicit flows -----------------------------------------------------------------


def test_explicit_flows_dicts_and_tuples():
    flows = explicit_flows(
        [
            {"src": 0, "dst": 1, "size": "1MB", "start": "10us"},
            (2, 3, 500, 7),
            {"src": 3, "dst": 0, "size": 64, "start": 0, "prio": 1},
            (1, 2, "1KiB", "1ns", 6),
        ]
    )
    assert flows.src.tolist() == [0, 2, 3, 1]
    assert flows.dst.tolist() == [1, 3, 0, 2]
    assert flows.size.tolist() == [10**6, 500, 64, 1024]
    assert flows.start.tolist() == [10 * US, 7, 0, 1000]
    assert flows.prio.tolist() == [3, 3, 1, 6]
    assert len(explicit_flows([])) == 0


@pytest.mark.parametrize(
    "flow, message",
    [
        ({"src": 0, "dst": 1, "size": 1}, "flows[0]: missing field 'start'"),
        ({"src": 0, "dst": 1, "size": 1, "start": 0, "when": 3}, "flows[0]: unknown field 'when'"),
        ((0, 1, 2), "flows[0]: expected (src, dst, size, start[, prio]), got 3 values"),
        ((0, 1, "1XB", 0), "flows[0].size: unknown size unit 'XB'"),
        ((0, 1, 10, "-1us"), "flows[0].start: time must not be negative"),
        ((0, -1, 10, 0), "flows[0].dst: expected a host id"),
        ((0, 1, 10, 0, 9), "flows[0].prio: priority must be an integer 0..7"),
        ("0 1 10 0", "flows[0]: expected a mapping or a tuple"),
    ],
)
def test_explicit_flow_errors(flow, message):
    with pytest.raises(ScenarioError) as info:
        explicit_flows([flow])
    assert str(info.value).startswith(message)


# --- incast and permutation ---------------------------------------------------------


def test_incast_shape():
    flows = incast([1, 2, 3, 5], receiver=0, size="500KB", start="2us", prio=2)
    assert flows.src.tolist() == [1, 2, 3, 5]
    assert set(flows.dst.tolist()) == {0}
    assert set(flows.size.tolist()) == {500_000}
    assert set(flows.start.tolist()) == {2 * US}
    assert set(flows.prio.tolist()) == {2}
    assert incast(60, 100, 500_000, 0).src.tolist() == list(range(60))


def test_incast_errors():
    with pytest.raises(ScenarioError, match="senders: the receiver 2 is also listed as a sender"):
        incast([1, 2], 2, "1KB", 0)
    with pytest.raises(ScenarioError, match="senders: needs at least 1 host"):
        incast([], 0, "1KB", 0)
    with pytest.raises(ScenarioError, match="senders: host 1 is listed more than once"):
        incast([1, 1], 0, "1KB", 0)
    with pytest.raises(ScenarioError, match="size: unknown size unit 'XB'"):
        incast([1], 0, "1XB", 0)


@pytest.mark.parametrize("seed", range(20))
def test_permutation_is_a_derangement(seed):
    flows = permutation(16, "1MB", "1us", np.random.default_rng(seed))
    assert flows.src.tolist() == list(range(16))
    assert sorted(flows.dst.tolist()) == list(range(16))  # every host receives exactly once
    assert not np.any(flows.src == flows.dst)
    assert set(flows.size.tolist()) == {10**6} and set(flows.start.tolist()) == {US}


def test_permutation_on_a_host_subset():
    hosts = [3, 10, 42]
    flows = permutation(hosts, 100, 0, np.random.default_rng(1))
    assert flows.src.tolist() == hosts
    assert sorted(flows.dst.tolist()) == hosts
    assert not np.any(flows.src == flows.dst)
    pair = permutation(2, 100, 0, np.random.default_rng(0))
    assert pair.dst.tolist() == [1, 0]


def test_permutation_is_uniform_over_derangements():
    # 3 hosts have exactly two derangements: (1, 2, 0) and (2, 0, 1)
    rng = np.random.default_rng(5)
    seen = [tuple(permutation(3, 1, 0, rng).dst.tolist()) for _ in range(2000)]
    assert set(seen) == {(1, 2, 0), (2, 0, 1)}
    assert seen.count((1, 2, 0)) / len(seen) == pytest.approx(0.5, abs=0.05)


def test_permutation_needs_two_hosts():
    with pytest.raises(ScenarioError, match="hosts: needs at least 2 host"):
        permutation(1, 100, 0, np.random.default_rng(0))


# --- Poisson arrivals ---------------------------------------------------------------


def offered_fraction(flows, hosts, rate_bps, duration_ps):
    """Offered bits per host divided by what the host's link could carry in the window."""
    bits = (
        np.bincount(flows.src, weights=flows.size.astype(float), minlength=max(hosts) + 1)[hosts]
        * 8
    )
    return bits / (np.asarray(rate_bps, dtype=float) * duration_ps / SECOND)


def test_poisson_offered_load_matches_target():
    hosts = list(range(16))
    flows = poisson_cdf(hosts, "100Gbps", 0.5, "1s", WEBSEARCH, np.random.default_rng(11))
    offered = offered_fraction(flows, hosts, 100e9, SECOND)
    assert offered.mean() == pytest.approx(0.5, rel=0.03)
    assert np.all(np.abs(offered / 0.5 - 1) < 0.25)  # heavy-tailed sizes: per host is noisier
    expected_flows = 16 * 0.5 * 100e9 / (8 * WEBSEARCH.mean())
    assert len(flows) == pytest.approx(expected_flows, rel=0.02)


def test_poisson_per_host_rates():
    hosts = [0, 1, 2, 3]
    rates = np.array([100e9, 100e9, 25e9, 25e9])
    flows = poisson_cdf(hosts, rates, 0.3, "1s", FB_HADOOP, np.random.default_rng(2))
    expected_counts = 0.3 * rates / (8 * FB_HADOOP.mean())  # flows per host in one second
    assert np.allclose(np.bincount(flows.src, minlength=4), expected_counts, rtol=0.05)
    total_bits = flows.size.sum() * 8
    assert total_bits == pytest.approx(0.3 * rates.sum(), rel=0.08)


def test_poisson_sizes_follow_the_cdf():
    flows = poisson_cdf(8, "100Gbps", 0.5, "2s", WEBSEARCH, np.random.default_rng(4))
    assert flows.size.mean() == pytest.approx(WEBSEARCH.mean(), rel=0.03)
    assert np.mean(flows.size <= 10_000) == pytest.approx(0.15, abs=0.01)


def test_poisson_inter_arrivals_look_exponential():
    flows = poisson_cdf(8, "100Gbps", 0.5, "1s", "fb_hadoop", np.random.default_rng(9))
    mean_gap = FB_HADOOP.mean() * 8 / (0.5 * 100e9) * SECOND
    for host in range(8):
        gaps = np.diff(flows.start[flows.src == host]).astype(float)
        assert gaps.mean() == pytest.approx(mean_gap, rel=0.05)
        assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)  # CV of an exponential
        # memoryless: P(gap > mean) = 1/e
        assert np.mean(gaps > mean_gap) == pytest.approx(np.exp(-1), abs=0.02)


def test_poisson_destinations_and_window():
    hosts = [2, 5, 7, 11]
    flows = poisson_cdf(
        hosts, 10**10, 0.8, "1s", WEBSEARCH, np.random.default_rng(1), start_ps="1ms", prio=1
    )
    assert len(flows) > 2000
    assert set(flows.src.tolist()) == set(hosts) and set(flows.dst.tolist()) == set(hosts)
    assert not np.any(flows.src == flows.dst)
    assert flows.start.min() >= 10**9 and flows.start.max() < SECOND + 10**9
    assert np.all(np.diff(flows.start) >= 0)
    assert set(flows.prio.tolist()) == {1}
    # destinations uniform among the other three hosts
    from_first = flows.dst[flows.src == 2]
    for other in (5, 7, 11):
        assert np.mean(from_first == other) == pytest.approx(1 / 3, abs=0.06)
    flows.validate(12)


def test_poisson_same_seed_same_table():
    args = (32, "100Gbps", 0.3, "5ms", WEBSEARCH)
    a = poisson_cdf(*args, np.random.default_rng(123))
    b = poisson_cdf(*args, np.random.default_rng(123))
    c = poisson_cdf(*args, np.random.default_rng(124))
    assert a.equals(b)
    assert not a.equals(c)


def test_poisson_accepts_custom_cdf():
    cdf = FlowSizeCDF([(1000, 0), (1000, 100)])  # every flow exactly 1000 B
    flows = poisson_cdf(2, "1Gbps", 0.5, "10ms", cdf, np.random.default_rng(0))
    assert set(flows.size.tolist()) == {1000}
    assert len(flows) == pytest.approx(2 * 0.5 * 1e9 * 0.01 / 8000, rel=0.1)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(load=0), "load: expected a positive number"),
        (dict(load=float("nan")), "load: expected a positive number"),
        (dict(duration_ps=0), "duration: must be longer than 0"),
        (dict(duration_ps="-1ms"), "duration: time must not be negative"),
        (dict(cdf="datamining"), "cdf: unknown flow-size distribution 'datamining'"),
        (dict(cdf=[(0, 0)]), "cdf: expected a FlowSizeCDF"),
        (dict(host_rate_bps=[1e9, 1e9]), "host_rate: expected one rate or 4 numbers"),
        (dict(host_rate_bps=[1e9, 1e9, 0, 1e9]), "host_rate: every host rate must be a positive"),
        (dict(hosts=1), "hosts: needs at least 2 host"),
        (dict(prio=8), "prio: priority must be an integer 0..7"),
    ],
)
def test_poisson_errors(kwargs, message):
    args = dict(
        hosts=4,
        host_rate_bps="10Gbps",
        load=0.5,
        duration_ps="1ms",
        cdf=WEBSEARCH,
        rng=np.random.default_rng(0),
    )
    args.update(kwargs)
    with pytest.raises(ScenarioError) as info:
        poisson_cdf(**args)
    assert str(info.value).startswith(message)


# --- HPCC flow files ----------------------------------------------------------------


def test_hpcc_flow_file_round_trip(tmp_path):
    flows = FlowTable(
        src=[3, 0, 1],
        dst=[0, 1, 2],
        size=[1000, 2_000_000, 7],
        start=[5 * US, 2 * SECOND + 1, 0],
        prio=[3, 1, 3],
        dport=[100, 200, 300],
    )
    path = tmp_path / "flow.txt"
    write_hpcc_flow_file(flows, path)
    lines = path.read_text().splitlines()
    assert lines[0] == "3"
    assert lines[1] == "1 2 3 300 7 0.000000000000"
    assert lines[3] == "0 1 1 200 2000000 2.000000000001"
    back = hpcc_flow_file(path)
    assert back.equals(flows.sorted_by_start())


def test_hpcc_flow_file_reads_reference_style(tmp_path):
    path = tmp_path / "flow.txt"
    path.write_text("2\n2 1 3 100 200000 2.000000001\n0 2 3 100 1000 2.0000005\n")
    flows = hpcc_flow_file(path)
    assert flows.src.tolist() == [2, 0] and flows.dst.tolist() == [1, 2]
    assert flows.start.tolist() == [2 * SECOND + 1000, 2 * SECOND + 500_000]
    assert flows.size.tolist() == [200_000, 1000]
    assert flows.dport.tolist() == [100, 100]


def test_hpcc_flow_file_maps_ids_through_topology(tmp_path):
    # file node 0 is a switch; file hosts 1, 2, 4 become hosts 0, 1, 2
    topo_path = tmp_path / "topo.txt"
    topo_path.write_text(
        "5 2 4\n0 3\n1 0 1Gbps 1us 0\n2 0 1Gbps 1us 0\n4 3 1Gbps 1us 0\n0 3 1Gbps 1us 0\n"
    )
    topo = from_hpcc_file(topo_path)
    flow_path = tmp_path / "flow.txt"
    flow_path.write_text("2\n1 4 3 100 1000 0.1\n4 2 3 100 1000 0.2\n")
    flows = hpcc_flow_file(flow_path, topo)
    assert flows.src.tolist() == [0, 2] and flows.dst.tolist() == [2, 1]
    flows.validate(topo.n_hosts)
    out = tmp_path / "out.txt"
    write_hpcc_flow_file(flows, out, topo)
    assert out.read_text().splitlines()[1:] == [
        "1 4 3 100 1000 0.100000000000",
        "4 2 3 100 1000 0.200000000000",
    ]
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n0 1 3 100 1000 0\n")
    with pytest.raises(
        ScenarioError, match=r"bad.txt:2: src 0 is a switch; flows run between hosts"
    ):
        hpcc_flow_file(bad, topo)
    bad.write_text("1\n1 9 3 100 1000 0\n")
    with pytest.raises(ScenarioError, match="dst 9 is not a node of the topology"):
        hpcc_flow_file(bad, topo)


def test_hpcc_flow_file_empty_table(tmp_path):
    path = tmp_path / "none.txt"
    write_hpcc_flow_file(FlowTable.empty(), path)
    assert path.read_text() == "0\n"
    assert len(hpcc_flow_file(path)) == 0


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("", None, "file is empty"),
        ("2 3\n", 1, "expected 1 fields 'flow_count'"),
        ("-1\n", 1, "flow count -1 must not be negative"),
        ("2\n0 1 3 100 1000 0\n", 2, "line 1 declares 2 flows but the file has 1"),
        ("1\n0 1 3 100 1000 0\n1 0 3 100 1000 0\n", 3, "unexpected line after the 1 flows"),
        (
            "1\n0 1 3 100 1000\n",
            2,
            "expected 6 fields 'src dst priority dport size_bytes start_seconds'",
        ),
        ("1\n0 x 3 100 1000 0\n", 2, "dst must be an integer, got 'x'"),
        ("1\n-1 1 3 100 1000 0\n", 2, "src -1 must not be negative"),
        ("1\n1 1 3 100 1000 0\n", 2, "src and dst are both node 1"),
        ("1\n0 1 9 100 1000 0\n", 2, "priority 9 must be within 0..7"),
        ("1\n0 1 3 70000 1000 0\n", 2, "dport 70000 must be within 0..65535"),
        ("1\n0 1 3 100 0 0\n", 2, "size_bytes 0 must be at least 1"),
        ("1\n0 1 3 100 1000 soon\n", 2, "start_seconds must be a number, got 'soon'"),
        ("1\n0 1 3 100 1000 -1\n", 2, "time must not be negative"),
    ],
)
def test_hpcc_flow_file_errors(tmp_path, text, line, message):
    path = tmp_path / "flows.txt"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        hpcc_flow_file(path)
    assert info.value.key == (str(path) if line is None else f"{path}:{line}")
    assert message in info.value.reason


def test_flow_tables_fit_generated_topologies():
    topo = star(8, "100Gbps", "1us")
    flows = FlowTable.concat(
        [
            incast([1, 2, 3], 0, "64KB", 0).with_tag(0),
            permutation(topo.n_hosts, "1MB", "1us", np.random.default_rng(0)).with_tag(1),
        ]
    )
    flows.validate(topo.n_hosts)
    assert isinstance(topo, Topology)
    assert flows.tag.tolist() == [0] * 3 + [1] * 8
