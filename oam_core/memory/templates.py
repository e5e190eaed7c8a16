"""Prompt templates of the LLM pipeline (docs/memory-pipeline.md).

Templates are versioned text files in ``oam_core/memory/prompts/`` (``<name>_v<n>.txt``)
with ``$name`` placeholders (``string.Template``), so prompt text stays out of code and
a prompt change is a new file, visible in review.
"""

from __future__ import annotations

import functools
import json
import string
from importlib import resources
from typing import Any

__all__ = ["PromptTemplate", "load_prompt"]


class PromptTemplate:
    """A named, versioned prompt (``name`` like ``"extraction_v1"``).

    Raises:
        KeyError: from ``render`` when a placeholder has no value.
    """

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self._template = string.Template(text)

    @property
    def answer_form(self) -> Any:
        """The JSON value that ends the template's last non-blank line (from its
        first ``{``): the form the prompt asks its answer in (``{"summary": "...",
        "topics": ["..."]}``), which small models echo after or instead of their
        answer (memory/placeholders.py); None when that line holds no JSON object."""
        lines = self._template.template.strip().splitlines()
        start = lines[-1].find("{") if lines else -1
        try:
            return json.loads(lines[-1][start:]) if start >= 0 else None
        except ValueError:
            return None

    def render(self, **values: str) -> str:
        """Fill every ``$placeholder`` with ``values`` (plain text, inserted as is)."""
        return self._template.substitute(values)


@functools.cache
def load_prompt(name: str) -> PromptTemplate:
    """Load ``prompts/<name>.txt`` shipped with the package.

    Raises:
        FileNotFoundError: for an unknown template name.
    """
    path = resources.files("oam_core.memory").joinpath("prompts").joinpath(f"{name}.txt")
    return PromptTemplate(name, path.read_text(encoding="utf-8"))
