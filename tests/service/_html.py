"""Reading the inspector's HTML in tests: its text, and the hidden fields of a form."""

from __future__ import annotations

import re
from html import unescape


def page_text(html: str) -> str:
    """The text of ``html``, tags removed, whitespace collapsed, entities decoded."""
    return unescape(" ".join(re.sub(r"<[^>]+>", " ", html).split()))


def hidden(html: str, name: str) -> str:
    """The value of the form's hidden 64-hex-digit field ``name`` (csrf_token,
    based_on)."""
    match = re.search(rf'name="{name}" value="([0-9a-f]{{64}})"', html)
    assert match, html
    return match.group(1)
