"""Shared test set-up: Hypothesis profiles (``ci`` is derandomized; `make test` selects it)."""

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=40,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=40)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "remp"
SEEDS = REPO.parent / "shared" / "seeds"
