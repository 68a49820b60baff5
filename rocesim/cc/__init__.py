"""Congestion control: the schemes, their declared parameters, and schemes written in Python.

    from rocesim.cc import get_scheme, builtin_schemes, PythonScheme

Built-in schemes live in the core, one file each (`rocesim/_core/cc_<name>.pyx`, callbacks
and declaration together); `registry` finds them.  `python` is the base class for schemes
written in Python.
"""
from rocesim.cc.python import PythonScheme, number, rate, size, time
from rocesim.cc.registry import builtin_schemes, get_scheme
from rocesim.cc.scheme import Context, Scheme

__all__ = ["PythonScheme", "Scheme", "Context", "builtin_schemes", "get_scheme",
           "number", "rate", "size", "time"]
