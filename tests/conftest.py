"""Shared set-up of every test folder: tests/ on the module path, so that a test in any
folder imports the shared modules beside this file (`from helpers import ...`, the Python
schemes `pyschemes:<Class>`, `chakra_writer`), under `pytest` and `python -m pytest` alike."""
import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
pytest.register_assert_rewrite("helpers")      # its asserts explain themselves as a test's do


@pytest.fixture
def kept_figures(monkeypatch):
    """The figures the plot functions make, kept open (they close them after saving) until
    the test ends, to be read."""
    from rocesim.results import axes          # matplotlib: imported only by the tests that draw
    close = axes.plt.close
    figs = []
    monkeypatch.setattr(axes.plt, "close", figs.append)
    yield figs
    for fig in figs:
        close(fig)
