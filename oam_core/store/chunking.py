"""Cut retrieval text into chunks without splitting a character (docs/store.md#what-is-stored-and-what-is-searched).

Chunks are at most ``size`` characters and never cut inside a grapheme cluster (an
emoji ZWJ sequence or a letter with combining marks stays whole). A cut prefers the
last whitespace in the second half of the window, so words stay whole too.
"""

from __future__ import annotations

import regex

_GRAPHEME = regex.compile(r"\X")


def chunk_text(text: str, size: int) -> list[str]:
    """Split ``text`` into chunks of at most ``size`` characters.

    Args:
        text: The retrieval text.
        size: Maximum chunk length in characters (>= 1). A single grapheme longer
            than ``size`` becomes its own chunk.

    Returns:
        The chunks in order; ``[]`` when ``text`` is empty or only whitespace.
        Joining the chunks gives back ``text`` minus whitespace at the cuts.
    """
    if not text.strip():
        return []
    if len(text) <= size:
        return [text]
    graphemes = _GRAPHEME.findall(text)
    chunks: list[str] = []
    start = 0
    while start < len(graphemes):
        length = 0
        end = start
        last_space = -1
        while end < len(graphemes) and (length + len(graphemes[end]) <= size or end == start):
            if graphemes[end].isspace():
                last_space = end
            length += len(graphemes[end])
            end += 1
        if end < len(graphemes) and last_space > start + (end - start) // 2:
            end = last_space + 1
        piece = "".join(graphemes[start:end]).strip()
        if piece:
            chunks.append(piece)
        start = end
    return chunks
