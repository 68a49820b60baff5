"""Set-up of the scenario tests: a guard that no packet core is created."""
import pytest

from rocesim import simulation


@pytest.fixture
def no_core(monkeypatch):
    """Nothing may create the packet core: a scenario's errors come before anything runs."""
    monkeypatch.setattr(simulation, "Core", lambda *a, **k: pytest.fail("the core was created"))
