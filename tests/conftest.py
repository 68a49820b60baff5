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
