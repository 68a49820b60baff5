"""Examples of using rocesim from Python (importable as `examples.<name>` from the repo root)."""
