"""Traffic: flow tables and the generators and readers that produce them.

Every generator returns a :class:`FlowTable` with sizes in bytes and times in
picoseconds; random ones take a ``numpy.random.Generator`` so that a seed fixes the
result.
"""

from .distributions import FB_HADOOP, WEBSEARCH, FlowSizeCDF, builtin
from .explicit import explicit_flows
from .flowtable import DEFAULT_DPORT, DEFAULT_FLOW_PRIORITY, FlowTable
from .hpcc_flows import hpcc_flow_file, write_hpcc_flow_file
from .patterns import incast, permutation, repeated_incast
from .poisson import poisson_cdf

__all__ = [
    "FlowTable",
    "DEFAULT_FLOW_PRIORITY",
    "DEFAULT_DPORT",
    "FlowSizeCDF",
    "WEBSEARCH",
    "FB_HADOOP",
    "builtin",
    "explicit_flows",
    "incast",
    "permutation",
    "repeated_incast",
    "poisson_cdf",
    "hpcc_flow_file",
    "write_hpcc_flow_file",
]
