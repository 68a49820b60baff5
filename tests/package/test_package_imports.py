"""The package's imports form a tree: no cycle between modules, and no import inside a
function but of the optional heavy dependencies (the figure modules, which import
matplotlib, and Dask's `distributed`)."""
import ast
import pathlib

import rocesim

PACKAGE = pathlib.Path(rocesim.__file__).parent
# modules that import matplotlib at their top (imported lazily, so runs without figures
# never load matplotlib), and Dask's
LAZY = ("rocesim.results.plot", "rocesim.results.collective_plot", "rocesim.results.timeline_plot",
        "rocesim.sweep.plot", "rocesim.sweep.cluster", "distributed", "pyarrow", "matplotlib")


def _modules():
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), path


def _target(node, module, is_package):
    """The rocesim modules an import statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
        base = ".".join(anchor + ([base] if base else []))
    return [f"{base}.{a.name}" for a in node.names] + [base]


def _imports():
    known = dict(_modules())
    graph, inside = {}, []
    for module, path in known.items():
        tree = ast.parse(path.read_text())
        deps = set()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = [n for n in _target(node, module, path.name == "__init__.py")]
            top = node in tree.body or any(node in getattr(b, "body", []) for b in tree.body
                                            if isinstance(b, (ast.Try, ast.If)))
            if not top and not any(n.startswith(LAZY) for n in names):
                inside.append((module, node.lineno, names[0]))
            if top:
                deps |= {n for n in names if n in known and n != module}
        graph[module] = deps
    return graph, inside


def test_no_import_inside_a_function_but_of_heavy_optional_dependencies():
    _, inside = _imports()
    assert inside == []


def test_no_import_cycle():
    graph, _ = _imports()
    # a package's face (__init__) may re-export its own modules; a module importing its
    # package's face and being imported by it would still be a cycle, and is caught
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = 1
        for d in sorted(graph[m]):
            if d.startswith(m + "."):
                continue                    # a package importing its own submodule
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d] if d in stack else [m, d])
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []
