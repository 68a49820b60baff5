"""Built-in schemes declare themselves as data in the core's vocabulary (rocesim/_core/declare.py);
the registry makes them Schemes, and each install() turns the finalized parameters into its C
struct in one step.  A declaration that drifts from its struct, a parameter read by hand, or
an integer division folded to 0 (the core compiles with `cdivision`) must fail here."""
import re
from pathlib import Path

import pytest
from helpers import ser_ps

from rocesim import ScenarioError, Simulation, topology
from rocesim._core import declare
from rocesim._core.engine import Core
from rocesim.cc import builtin_schemes, registry

SCHEMES = builtin_schemes()
CORE = Path(declare.__file__).parent
US = 10**6


def declaration(name):
    return SCHEMES[name].load_module().DECLARATION


def choice_variants():
    """(scheme, params): the defaults, and each value of each choice parameter."""
    out = []
    for name in SCHEMES:
        out.append((name, {}))
        for pname, kind, default, _ in declaration(name)["params"]:
            tag, args, _ = declare.split_type(kind)
            if tag == "choice":
                out += [(name, {pname: v}) for v in args[0] if v != default]
    return out


@pytest.mark.parametrize("name,params", choice_variants(), ids=lambda x: str(x))
def test_every_scheme_installs_from_its_declaration_and_runs(name, params):
    """Every scheme of the registry, with its defaults and with each choice, installs (its
    struct takes exactly its declared parameters) and carries a flow through an incast."""
    sim = Simulation(topology.star(4, "100Gbps", "1us"), cc=name, cc_params=params)
    for h in (1, 2, 3):
        sim.add_flow(h, 0, 200_000)
    res = sim.run(stop="5ms")
    assert res.summary["flows_completed"] == 3
    assert (res.flows["delivered_bytes"] == 200_000).all()
    assert list(sim.cc_final) == [p[0] for p in declaration(name)["params"]]
    assert all(v != "auto" for v in sim.cc_final.values())


def finalized(name, rate, params=None):
    sim = Simulation(topology.star(3, rate, "1us"), cc=name, cc_params=params)
    sim.add_flow(1, 2, 10_000)
    sim.run()
    return sim.cc_final


RATES = [25 * 10**9, 100 * 10**9, 400 * 10**9]


def rtt_ps(rate, data, ack):
    """Idle RTT across the star's two links each way."""
    return 2 * (ser_ps(data, rate) + US) + 2 * (ser_ps(ack, rate) + US)


def bdp(rate):
    return int(rtt_ps(rate, 1048, 60) * rate / 8e12)


def published(name, rate, variant=""):
    """The defaults as the papers and the HPCC fork's run.py give them, at host rate `rate`."""
    per100g = rate / 100e9
    if name == "none":
        return dict(window=bdp(rate) if variant == "bdp" else 0)
    if name == "dcqcn" and variant == "paper":          # SIGCOMM 2015 at 40G, scaled with the rate
        return dict(preset="paper", notify="cnp", g=1 / 256, t_alpha=55 * US, t_dec=0, t=55 * US,
                    b=10_000_000, f=5, rai=40e6 * rate / 40e9, rhai=400e6 * rate / 40e9,
                    min_rate=1e8 * rate / 40e9, clamp=True, window=0)
    if name == "dcqcn":                                 # the fork: AI 5, HAI 50 Mb/s per 25G
        return dict(preset="mellanox", notify="ack", g=1 / 256, t_alpha=1 * US, t_dec=4 * US,
                    t=300 * US, b=0, f=1, rai=20e6 * per100g, rhai=200e6 * per100g, min_rate=1e9,
                    clamp=False, window=0)
    if name == "dctcp":
        return dict(g=1 / 16, mode="rate", rai=615e6, min_rate=1e9, window=bdp(rate))
    if name == "hpcc":                                  # T: with INT on data (42 B) and ACKs (28 B)
        t = rtt_ps(rate, 1090, 88)
        return dict(eta=0.95, max_stage=0, wai=40e6 * per100g * t / 8e12, t=t, min_rate=1e9)
    if name == "timely":
        return dict(alpha=0.875, beta=0.8, tlow=50 * US, thigh=500 * US, min_rtt=20 * US,
                    delta=100e6 * per100g, hai_after=5, segment=0, min_rate=1e9)
    if name == "swift":
        return dict(base_target=25 * US, h=25 * US / 6.55, fs_range=125 * US, fs_min_cwnd=0.1,
                    fs_max_cwnd=100.0, ai=1.0, beta=0.8, max_mdf=0.5, min_cwnd=0.001, max_cwnd=1000.0,
                    retx_reset=5)
    if name == "nscc":                                  # uet-htsim uec.cpp initNsccParams
        rtt = rtt_ps(rate, 1048, 60)
        return dict(network_rtt=rtt, target_delay=round(0.75 * rtt), scale=rtt * rate / 8e12 / 150_000,
                    prop_gain=4.0, fair_gain=5.0, eta_gain=0.15, fast_gain=0.25, fast_delay=1 * US, gamma=0.8,
                    md_floor=0.5, delay_ewma=0.0125, qa_gate=3, qa_threshold=4.0, max_window_bdp=1.5,
                    min_window=1.0, fulfill_packets=8.0)
    raise AssertionError(f"no published defaults for {name}")


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("name,variant,params", [
    ("none", "", None), ("none", "bdp", {"window": "bdp"}), ("dcqcn", "", None),
    ("dcqcn", "paper", {"preset": "paper"}), ("dctcp", "", None), ("hpcc", "", None),
    ("timely", "", None), ("swift", "", None), ("nscc", "", None)])
def test_finalized_defaults_are_the_published_values(name, variant, params, rate):
    """No fraction of a declaration became C's integer division (1 / 256 -> 0), and the
    per-rate defaults scale with the host rate."""
    assert set(SCHEMES) == {"none", "dcqcn", "dctcp", "hpcc", "timely", "swift", "nscc"}   # each one is here
    want = {k: pytest.approx(v, rel=1e-12) if isinstance(v, float) else v
            for k, v in published(name, rate, variant).items()}
    assert finalized(name, rate, params) == want


@pytest.mark.parametrize("rate", RATES)
def test_ecn_defaults_are_the_published_thresholds(rate):
    fork = (int(100_000 * rate / 25e9), int(400_000 * rate / 25e9), 0.2)       # Kmin 100 KB, Kmax 400 KB per 25G
    for name in ("none", "dcqcn", "hpcc", "timely", "swift"):
        assert SCHEMES[name].ecn_defaults(rate) == fork
    k = int(30_000 * rate / 10e9)                                               # DCTCP: K 30 KB per 10G
    assert SCHEMES["dctcp"].ecn_defaults(rate) == (k, k, 1.0)
    paper = SCHEMES["dcqcn"].ecn_defaults(rate, {"preset": "paper"})            # 5 KB, 200 KB, 1% at 40G
    assert paper == (int(5_000 * rate / 40e9), int(200_000 * rate / 40e9), 0.01)
    # NSCC: uet-htsim's 9 and 35 packets of 4150 B at 100G (0.2 and 0.8 of its BDP), rising to 1
    assert SCHEMES["nscc"].ecn_defaults(rate) == (int(37_350 * rate / 100e9), int(145_250 * rate / 100e9), 1.0)


# --- the declaration section of a .pyx is compiled with Python's division --------------------

def scheme_sources():
    """The .pyx of every scheme of the registry."""
    return sorted(CORE / (SCHEMES[name].module.rsplit(".", 1)[1] + ".pyx") for name in SCHEMES)


def test_every_declaration_sits_in_a_block_with_pythons_division():
    """The finalize functions and DECLARATION of each scheme come after the file's one
    `with cython.cdivision(False):` line, indented in it up to the end of the file: no
    Python-level arithmetic of a declaration is compiled as C's division."""
    sources = scheme_sources()
    assert sources == sorted(p for p in CORE.glob("cc_*.pyx") if "DECLARATION = dict(" in p.read_text())
    for path in sources:
        lines = path.read_text().splitlines()
        opens = [i for i, line in enumerate(lines) if line.startswith("with cython.cdivision(False):")]
        assert len(opens) == 1, path.name
        block = lines[opens[0] + 1:]
        assert all(not line or line[0] in " #" for line in block), path.name
        assert any(line.startswith("    DECLARATION = dict(") for line in block), path.name
        top_level_defs = [line.split("(")[0] for line in lines if line.startswith("def ")]
        assert top_level_defs == ["def install"], path.name


def test_install_reads_the_parameters_through_the_struct_only():
    """Each parameter is named twice (its struct field and its declaration), never read by hand
    in install() (`params["eta"]`): a typo would then be a KeyError in a user's run."""
    for path in scheme_sources():
        body = re.search(r"^def install\(core, params\):\n((?:[ \t]+.*\n|\n)+)", path.read_text(), re.M)
        assert "declared_values(DECLARATION, params)" in body.group(1), path.name
        assert not re.search(r"params(\.get)?[\[(]\s*[\"']", body.group(1)), path.name


# --- a declaration and its struct that drift apart are refused at install --------------------

def fresh_core(name):
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc=name)
    sim.add_flow(1, 2, 10_000)
    sim.run()                                         # sim.cc_final: the finalized defaults
    world, params = sim.core_inputs()
    return Core(world, params), sim.cc_final


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_install_refuses_parameters_its_struct_does_not_hold(name, monkeypatch):
    module = SCHEMES[name].load_module()
    core, final = fresh_core(name)
    first = next(iter(final))
    with pytest.raises(ValueError, match=f"No value specified for struct attribute '{first}'"):
        module.install(core, {k: v for k, v in final.items() if k != first})
    with pytest.raises(ValueError, match=r"\['typo'\] not declared"):
        module.install(core, {**final, "typo": 1})
    # a parameter declared but missing from the struct (a misspelt field)
    decl = dict(module.DECLARATION, params=module.DECLARATION["params"] + (("typo", ("number", 0, 1), 0.5, ""),))
    monkeypatch.setattr(module, "DECLARATION", decl)
    with pytest.raises(ValueError, match=r"declared parameters \['typo'\] have no field"):
        module.install(core, {**final, "typo": 0.5})
    monkeypatch.undo()
    core.install_scheme(module, final)                # the real one installs


def test_choices_reach_c_as_the_option_they_name():
    """A choice is its index among the options in the struct: DCQCN's notify=cnp makes CNP
    packets, notify=ack none (every ACK of a marked packet is the CNP)."""
    assert declare.declared_values(declaration("dcqcn"), {"notify": "cnp", "clamp": True}) == {"notify": 1, "clamp": 1}

    def cnps(notify):
        sim = Simulation(topology.star(9, "100Gbps", "1us"), cc="dcqcn", cc_params={"notify": notify})
        for h in range(1, 9):
            sim.add_flow(h, 0, 1_000_000)
        res = sim.run(stop="1ms")
        assert res.ports["ecn_marks"].sum() > 0
        return res.summary["cnps"]
    assert cnps("ack") == 0 and cnps("cnp") > 0


# --- the vocabulary and the registry ---------------------------------------------------------

def test_every_type_tag_has_a_settings_type_with_its_words():
    assert set(registry.TYPES) == set(declare.TYPE_ARGS)
    parse = registry.setting_type(("size", "auto", "window")).parse
    assert parse("auto", "k") == "auto" and parse("window", "k") == "window" and parse("2KB", "k") == 2000
    with pytest.raises(ScenarioError, match="k"):
        parse("often", "k")
    assert registry.setting_type(("choice", ("ack", "cnp"), "auto")).parse("cnp", "k") == "cnp"
    with pytest.raises(ScenarioError):
        registry.setting_type(("positive_time",)).parse("0us", "k")
    assert registry.setting_type(("window",)).parse("bdp", "k") == declare.WINDOW_BDP


@pytest.mark.parametrize("bad,match", [
    (dict(name="x", doc="d", params=(("a", ("real", 0, 1), 0, ""),)), "unknown parameter type"),
    (dict(name="x", doc="d", params=(("a", ("number", 0), 0, ""),)), "takes 2 argument"),
    (dict(name="x", doc="d", params=(("a", ("choice", "p", "q"), "p", ""),)), "tuple of strings"),
    (dict(name="x", doc="d", params=(("a", ("size",), 0, ""), ("a", ("size",), 0, ""))), "declared twice"),
    (dict(name="x", doc="d", params=(("a", ("size",), 0),)), "(name, type, default, meaning)"),
    (dict(name="x", doc="d", params=(), needs_ecn=True), "unknown keys"),
])
def test_malformed_declarations_are_refused(bad, match):
    with pytest.raises(ValueError, match=re.escape(match)):
        registry.scheme_of(bad, "rocesim._core.cc_none")


@pytest.mark.parametrize("name,params,key", [
    ("dctcp", {"mode": "window", "window": "none"}, "cc.params.window"),
    ("swift", {"fs_min_cwnd": 200.0}, "cc.params.fs_min_cwnd"),
    ("swift", {"min_cwnd": 2000.0}, "cc.params.min_cwnd"),
])
def test_finalize_errors_name_the_key_path(name, params, key):
    sim = Simulation(topology.star(3, "100Gbps", "1us"), cc=name, cc_params=params)
    sim.add_flow(1, 2, 10_000)
    with pytest.raises(ScenarioError) as e:
        sim.run()
    assert e.value.key == key


def test_a_declaration_becomes_the_scheme_it_describes():
    """What the registry makes of each optional part: defaults, needs, ECN spec, NIC defaults."""
    def finalize(p, ctx):
        if p["k"] > ctx.host_rate_bps:
            raise declare.ParamError("k", "too big")
        return declare.fill(p, dict(w=ctx.max_bdp_bytes))

    plain = registry.scheme_of(dict(name="x", doc="d", params=()), "rocesim._core.cc_none")
    assert (plain.params, plain.needs_int, plain.cnp_needed({}), plain.nic_defaults({})) == ({}, False, False, {})
    assert plain.ecn_defaults(100 * 10**9) == (400_000, 1_600_000, 0.2)           # the fork's RED
    s = registry.scheme_of(dict(
        name="y", doc="one line", params=(("k", ("rate",), "1Gbps", "a rate"), ("w", ("size", "auto"), "auto", "")),
        finalize=finalize, needs_int=True, needs_cnp=lambda p: p["k"] > 5, ecn=("step", 10_000),
        nic_defaults=lambda p: {"ack_every": 2}), "rocesim._core.cc_none")
    assert [(n, k.default, k.doc) for n, k in s.params.items()] == [("k", "1Gbps", "a rate"), ("w", "auto", "")]
    params = s.resolve_params({"w": "2KB"})
    assert params == {"k": 10**9, "w": 2000} and s.needs_int and s.cnp_needed(params)
    assert s.ecn_defaults(40 * 10**9) == (40_000, 40_000, 1.0) and s.nic_defaults(params) == {"ack_every": 2}
    ctx = declare.Context(host_rate_bps=10**10, max_base_rtt_ps=10**6, max_bdp_bytes=1250)
    assert s.finalize(s.resolve_params(None), ctx) == {"k": 10**9, "w": 1250}
    with pytest.raises(ScenarioError) as e:
        s.finalize(s.resolve_params({"k": "20Gbps"}), ctx)
    assert (e.value.key, e.value.reason) == ("cc.params.k", "too big")
    assert registry.scheme_of(dict(name="z", doc="", params=(), nic_defaults={"ttl": 9}),
                              "rocesim._core.cc_none").nic_defaults({}) == {"ttl": 9}
