"""The core depends on nothing above it (DESIGN.md, Layering), and the results' C formatting
lives with the results."""
import ast
import importlib.machinery
import re
from pathlib import Path

import rocesim
from rocesim.results import csv_text

CORE = Path(rocesim.__file__).resolve().parent / "_core"

# `import x`, `from x import`, `cimport x`, `from x cimport` at the start of a line, and
# import_module("x") / __import__("x") anywhere (the .pyx and .pxd files are not Python: a
# line scan reads them; the .py files are parsed)
IMPORT_LINE = re.compile(r"^\s*(?:from\s+(\.*[\w.]*)\s+c?import\b|c?import\s+([\w.]+(?:\s*,\s*[\w.]+)*))",
                         re.MULTILINE)
IMPORT_CALL = re.compile(r"(?:import_module|__import__)\(\s*[\"']([\w.]+)")


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, as written (relative ones keep their dots)."""
    text = path.read_text()
    found = set(IMPORT_CALL.findall(text))
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.add("." * node.level + (node.module or ""))
        return found
    for m in IMPORT_LINE.finditer(text):
        if m.group(1) is not None:
            found.add(m.group(1))
        else:
            found.update(name.strip() for name in m.group(2).split(","))
    return found


def core_files():
    return sorted(p for p in CORE.iterdir() if p.suffix in (".pyx", ".pxd", ".py"))


def test_the_scan_sees_the_core_and_its_imports():
    files = {p.name for p in core_files()}
    assert {"engine.pyx", "defs.pxd", "cc_hpcc.pyx", "cc_python.pyx", "declare.py", "__init__.py"} <= files
    assert "rocesim._core.defs" in imported_modules(CORE / "engine.pyx")
    assert "rocesim._core.declare" in imported_modules(CORE / "cc_hpcc.pyx")
    assert "dataclasses" in imported_modules(CORE / "declare.py")


def test_the_core_imports_nothing_above_it():
    """No file of rocesim/_core imports a rocesim module outside rocesim._core (nor climbs out
    of the package with a relative import)."""
    upward = {}
    for path in core_files():
        bad = sorted(m for m in imported_modules(path) if m.startswith("..") or (
            (m == "rocesim" or m.startswith("rocesim.")) and not re.match(r"rocesim\._core(\.|$)", m)))
        if bad:
            upward[path.name] = bad
    assert upward == {}


def test_csv_cells_are_compiled_in_the_results_package():
    module = csv_text.format_rows.__module__
    assert module == "rocesim.results._csv_cells"
    path = Path(importlib.import_module(module).__file__)
    assert path.parent == Path(csv_text.__file__).parent
    assert path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))     # C, not Python
    assert not any(CORE.glob("csv_cells*"))
