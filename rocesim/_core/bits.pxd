# cython: language_level=3
"""Bit helpers shared by the bitsets of the core (events.pxd's calendar, active_set.pxd's
ready flows, fluid.pyx, the switch's round robin over its queues)."""

cdef extern from *:
    """
    static inline int rocesim_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    """
    int rocesim_ctz64(unsigned long long x) nogil   # the lowest set bit's index (x must not be 0)
