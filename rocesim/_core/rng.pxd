# cython: language_level=3
"""A small deterministic PRNG (splitmix64) for in-core random decisions (ECN marks)."""
from libc.stdint cimport uint64_t


cdef inline uint64_t rng_next(uint64_t* state) noexcept nogil:
    cdef uint64_t z
    state[0] += <uint64_t> 0x9E3779B97F4A7C15
    z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t> 0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t> 0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double rng_uniform(uint64_t* state) noexcept nogil:
    """Uniform double in [0, 1)."""
    return (rng_next(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline uint64_t mix64(uint64_t x) noexcept nogil:
    """Stateless hash (the splitmix64 finalizer), used for ECMP."""
    x = (x ^ (x >> 30)) * <uint64_t> 0xBF58476D1CE4E5B9
    x = (x ^ (x >> 27)) * <uint64_t> 0x94D049BB133111EB
    return x ^ (x >> 31)
