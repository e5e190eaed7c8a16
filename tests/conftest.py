"""Suite-wide settings: no network (pytest-socket, see pyproject), quiet libraries."""

from __future__ import annotations

import os

# litellm must never fetch its model price map from the internet during tests.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Recorded LLM traffic: the `recorded_llm` fixture and the `llm_cassette` marker.
pytest_plugins = ["tests.llm"]
