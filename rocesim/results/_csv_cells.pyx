# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""CSV lines of numeric columns, formatted in C: the engine of rocesim.results.csv_text.

Cells: int64 in decimal; bool (uint8) as 1/0; float64 as C's "%.3f" (correctly rounded,
as Python's) without a trailing ".000", NaN as an empty cell; text columns as bytes the
caller already quoted.  Floats take a fast integer path (x * 1000 rounded) unless they
lie within two units in the last place of a rounding boundary, are negative or huge:
those go through snprintf.  Lines end with CRLF, as Python's csv.writer ends them.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy
from libc.math cimport isnan, floor, rint, fabs, nextafter, signbit, INFINITY
from libc.stdio cimport snprintf
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE

import numpy as np

cdef enum:
    K_INT = 0
    K_FLOAT = 1
    K_BOOL = 2
    K_TEXT = 3
    CELL_MAX = 400          # room for any numeric cell ("%.3f" of 1e308 is 313 chars)


cdef inline Py_ssize_t _put_uint(char* out, unsigned long long v) noexcept nogil:
    cdef char tmp[24]
    cdef int n = 0, i
    if v == 0:
        out[0] = b'0'
        return 1
    while v:
        tmp[n] = <char> (48 + v % 10)
        v //= 10
        n += 1
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n


cdef inline Py_ssize_t _put_int(char* out, int64_t v) noexcept nogil:
    if v < 0:
        out[0] = b'-'
        return 1 + _put_uint(out + 1, <unsigned long long> (-(v + 1)) + 1)
    return _put_uint(out, <unsigned long long> v)


cdef inline Py_ssize_t _put_float(char* out, double x) noexcept nogil:
    cdef double y, frac
    cdef long long k
    cdef int n
    if isnan(x):
        return 0
    if not signbit(x) and x < 1e12:
        y = x * 1000.0
        frac = y - floor(y) - 0.5
        if fabs(frac) > 2.0 * (nextafter(y, INFINITY) - y):
            k = <long long> rint(y)
            n = _put_uint(out, <unsigned long long> (k // 1000))
            k = k % 1000
            if k:
                out[n] = b'.'
                out[n + 1] = <char> (48 + k // 100)
                out[n + 2] = <char> (48 + (k // 10) % 10)
                out[n + 3] = <char> (48 + k % 10)
                n += 4
            return n
    n = snprintf(out, CELL_MAX, "%.3f", x)
    if n >= 4 and out[n - 4] == b'.' and out[n - 3] == b'0' and out[n - 2] == b'0' and out[n - 1] == b'0':
        n -= 4
    return n


def format_rows(list columns, list kinds, Py_ssize_t lo, Py_ssize_t hi):
    """Bytes of rows lo..hi-1: `columns[c]` is a C-contiguous int64, float64 or uint8
    array (kinds 0, 1, 2) or a list of bytes (kind 3), all at least `hi` long."""
    cdef Py_ssize_t ncols = len(columns), r, c, n, cap, need
    cdef char* buf
    cdef char* grown
    cdef int kind
    cdef bytes cell
    cdef list keep = []
    cdef const uint8_t[::1] raw
    cdef int[::1] kv = np.asarray(kinds, np.intc)
    if ncols == 0 or hi <= lo:
        return b""
    cdef const char** data = <const char**> malloc(ncols * sizeof(char*))
    if data == NULL:
        raise MemoryError()
    for c in range(ncols):
        data[c] = NULL
        if kv[c] != K_TEXT:
            col = np.ascontiguousarray(columns[c])
            if col.shape[0] < hi or col.dtype.itemsize != (1 if kv[c] == K_BOOL else 8):
                free(data)
                raise ValueError("format_rows: a column is too short or of the wrong type")
            keep.append(col)
            raw = col.view(np.uint8)
            data[c] = <const char*> &raw[0]
        elif len(columns[c]) < hi:
            free(data)
            raise ValueError("format_rows: a column is too short")
    cap = max(1024, (hi - lo) * (ncols * 12 + 2))
    buf = <char*> malloc(cap)
    if buf == NULL:
        free(data)
        raise MemoryError()
    n = 0
    try:
        for r in range(lo, hi):
            for c in range(ncols):
                kind = kv[c]
                need = CELL_MAX + 3
                if kind == K_TEXT:
                    cell = columns[c][r]
                    need += PyBytes_GET_SIZE(cell)
                if n + need > cap:
                    cap = max(cap * 2, n + need)
                    grown = <char*> realloc(buf, cap)
                    if grown == NULL:
                        raise MemoryError()
                    buf = grown
                if kind == K_INT:
                    n += _put_int(buf + n, (<const int64_t*> data[c])[r])
                elif kind == K_FLOAT:
                    n += _put_float(buf + n, (<const double*> data[c])[r])
                elif kind == K_BOOL:
                    buf[n] = b'1' if data[c][r] else b'0'
                    n += 1
                else:
                    memcpy(buf + n, PyBytes_AS_STRING(cell), PyBytes_GET_SIZE(cell))
                    n += PyBytes_GET_SIZE(cell)
                if c < ncols - 1:
                    buf[n] = b','
                    n += 1
            buf[n] = b'\r'
            buf[n + 1] = b'\n'
            n += 2
        return PyBytes_FromStringAndSize(buf, n)
    finally:
        free(buf)
        free(data)
