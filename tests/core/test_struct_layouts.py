"""The sizes the core's cache-line layout relies on (defs.pxd, events.pxd, qp.pxd)."""
from rocesim._core import engine


def test_a_packet_is_one_cache_line():
    assert engine.PACKET_BYTES == 64


def test_a_flow_record_is_one_cache_line():
    """Every flow, started or not, costs its 64-byte record; a queue pair only while it is
    in flight."""
    assert engine.FLOW_BYTES == 64
    assert engine.QP_BYTES > engine.FLOW_BYTES


def test_events_are_32_bytes_so_four_siblings_fill_two_lines():
    assert engine.EVENT_BYTES == 32


def test_ports_start_on_cache_lines():
    assert engine.PORT_BYTES % 64 == 0
