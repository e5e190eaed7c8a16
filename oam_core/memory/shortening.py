"""Prompt-time shortening of oversized messages (docs/memory-pipeline.md#what-a-pass-does;
``max_message_token_length``).

Only the copy shown to the LLM is shortened; stored messages never change. With an
LLM, a head-and-tail excerpt bounded by ``message_shortening_input_token_limit`` is
condensed by one call; without one (or when that call fails) the message is cut with a
``MemoryPipelineWarning``.
"""

from __future__ import annotations

from collections.abc import Sequence

from oam_core.apis.llm import ILlm
from oam_core.errors import ConfigurationError
from oam_core.memory.diagnostics import pipeline_warning
from oam_core.memory.extraction import PromptMessage
from oam_core.memory.templates import load_prompt
from oam_core.memory.tokens import estimate_tokens, head_tail_excerpt, truncate_head
from oam_core.steps import Steps, call

__all__ = ["SHORTEN_PROMPT", "shorten_messages_steps"]

SHORTEN_PROMPT = "shorten_v1"
"""Template of the shortening prompt (``prompts/shorten_v1.txt``)."""
_WORDS_PER_TOKEN = 0.75


def _cut(message: PromptMessage, max_tokens: int, why: str) -> PromptMessage:
    pipeline_warning(
        f"message {message.id!r} ({estimate_tokens(message.content)} tokens) is longer than "
        f"max_message_token_length={max_tokens}; {why}, so its prompt copy is truncated"
    )
    return PromptMessage(
        message.id, message.role, message.timestamp, truncate_head(message.content, max_tokens)
    )


def shorten_messages_steps(
    messages: Sequence[PromptMessage],
    llm: ILlm | None,
    max_tokens: int,
    input_token_limit: int,
) -> Steps[list[PromptMessage]]:
    """Return ``messages`` with every content over ``max_tokens`` estimated tokens
    shortened to at most ``max_tokens`` (``<= 0``: nothing is shortened).

    Args:
        messages: Prompt copies of stored messages.
        llm: The model that condenses long messages, or None (truncation).
        max_tokens: ``max_message_token_length``.
        input_token_limit: ``message_shortening_input_token_limit``: bound on the
            excerpt sent for condensing (``<= 0``: no bound).
    """
    shortened: list[PromptMessage] = []
    for message in messages:
        if max_tokens <= 0 or estimate_tokens(message.content) <= max_tokens:
            shortened.append(message)
            continue
        if llm is None:
            shortened.append(_cut(message, max_tokens, "there is no LLM to condense it"))
            continue
        prompt = load_prompt(SHORTEN_PROMPT).render(
            max_words=str(max(1, int(max_tokens * _WORDS_PER_TOKEN))),
            role=message.role,
            content=head_tail_excerpt(message.content, input_token_limit),
        )
        try:
            text: str = yield from call(llm.generate, prompt)
        except ConfigurationError:  # e.g. no API key: the pass stops and says so
            raise
        except Exception as exc:
            shortened.append(_cut(message, max_tokens, f"condensing it failed ({exc!r})"))
            continue
        if not isinstance(text, str) or not text.strip():
            shortened.append(_cut(message, max_tokens, "the model returned no text"))
            continue
        condensed = truncate_head(text.strip(), max_tokens)
        shortened.append(PromptMessage(message.id, message.role, message.timestamp, condensed))
    return shortened
