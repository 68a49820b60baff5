"""The Cython core of rocesim (event loop, links, switches, NICs, congestion control)."""
