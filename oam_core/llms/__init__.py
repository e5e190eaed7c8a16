"""LLMs: LiteLLM-hosted chat models (docs/llms.md).

``LiteLLMLlm`` and ``EmptyReplyError`` are imported on first access, so importing this
package imports neither their module nor litellm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oam_core._lazy import lazy_attributes
from oam_core.apis.llm import ILlm
from oam_core.errors import InvalidArgumentError

if TYPE_CHECKING:
    from oam_core.llms.litellm import EmptyReplyError, LiteLLMLlm

__all__ = ["EmptyReplyError", "LiteLLMLlm", "resolve_llm"]

_LAZY = {
    "LiteLLMLlm": "oam_core.llms.litellm",
    "EmptyReplyError": "oam_core.llms.litellm",
}


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)


def resolve_llm(value: object, name: str = "llm") -> ILlm | None:
    """Turn an ``llm=`` argument into an LLM (docs/llms.md).

    Accepted values:

    * an ``ILlm``: returned as is;
    * None: None (no LLM);
    * a string: a LiteLLM model id, e.g. ``"openai/gpt-4o-mini"``, giving
      ``LiteLLMLlm(value)`` with its defaults (key from the provider's environment
      variable).

    Args:
        value: The value to resolve.
        name: Argument name used in error messages.

    Returns:
        The LLM, or None when ``value`` is None.

    Raises:
        InvalidArgumentError: if ``value`` is another type or an empty / blank
            string; the message names ``name`` and the value.
        ImportError: if ``value`` is a string and litellm is not installed
            (install ``oam[litellm]``).
    """
    if value is None or isinstance(value, ILlm):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentError(
            f"{name} must be an ILlm, a LiteLLM model id string or None, "
            f"got {type(value).__name__}: {value!r}"
        )
    model = value.strip()
    if not model:
        raise InvalidArgumentError(f"{name} must not be an empty model id, got {value!r}")
    from oam_core.llms.litellm import LiteLLMLlm

    return LiteLLMLlm(model)
