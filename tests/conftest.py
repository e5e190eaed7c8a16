"""Suite-wide settings: no network (pytest-socket, see pyproject), quiet libraries."""

from __future__ import annotations

import os

# litellm must never fetch its model price map from the internet during tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Recorded LLM traffic: the `recorded_llm` fixture and the `llm_cassette` marker.
pytest_plugins = ["tests.llm"]

# Property tests explore new examples on a developer's machine, and replay the same
# ones in CI (``CI`` set), so a CI run is never red by the luck of the draw.
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
