"""A congestion-control scheme written in plain Python: ECN-driven AIMD on the rate.

Select it from YAML with `cc: {scheme: "examples.ecn_aimd:EcnAimd", params: {ai: 50Mbps}}`
(run from the repository root, or put the module on PYTHONPATH), or from Python with
`Simulation(topo, cc="examples.ecn_aimd:EcnAimd")`.

Rules (and nothing else): every ACK without an ECN echo adds `ai` to the rate; an
ACK with an ECN echo multiplies it by `1 - beta`, at most once per base RTT; the rate
stays in [min_rate, line rate].  Each flow records its decisions in `flow.state`.
"""
from rocesim.cc import PythonScheme, number, rate


class EcnAimd(PythonScheme):
    """ECN-AIMD: additive increase per ACK, multiplicative decrease on ECN echo."""

    params = {
        "ai": rate("50Mbps", "rate added per unmarked ACK"),
        "beta": number(0.5, "fraction of the rate removed on an ECN echo"),
        "min_rate": rate("1Gbps", "lowest rate"),
    }

    def on_start(self, flow):
        flow.rate_bps = flow.line_rate_bps
        flow.state = {"last_cut_ps": -flow.base_rtt_ps, "cuts": 0, "increases": 0}

    def on_ack(self, flow, ack):
        st = flow.state
        if ack.ecn:
            if flow.now_ps - st["last_cut_ps"] >= flow.base_rtt_ps:
                flow.rate_bps = max(self.min_rate, flow.rate_bps * (1 - self.beta))
                st["last_cut_ps"] = flow.now_ps
                st["cuts"] += 1
        else:
            flow.rate_bps = min(flow.line_rate_bps, flow.rate_bps + self.ai)
            st["increases"] += 1
