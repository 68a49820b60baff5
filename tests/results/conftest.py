"""Set-up of the results tests: the figures a plot function makes, kept open to be read."""
import pytest


@pytest.fixture
def kept_figures(monkeypatch):
    """The figures the plot functions make, kept open (they close them after saving)."""
    from rocesim.results import plot          # matplotlib: imported only by the tests that draw
    figs = []
    monkeypatch.setattr(plot.plt, "close", figs.append)
    return figs
