"""Turn LoCoMo's ``observation`` annotations into the memories JSONL of
``locomo_recall.py --memories`` (for ``--on memories`` and ``--on both``).

LoCoMo annotates every session with observations: short facts about each speaker,
written by a strong model, each naming the dialog ids it was drawn from::

    "observation": {
        "session_1_observation": {
            "Caroline": [["Caroline attended an LGBTQ support group ...", "D1:3"], ...],
            "Melanie": [...]
        }, ...
    }

A source is one dialog id, a list of them, or a string holding several (``"D26:14,
D26:34"``). Each observation becomes one line ``{"sample_id", "content",
"record_type": "memory", "source_message_ids": ["<sample_id>:<dia_id>", ...],
"timestamp"}``: the message ids ``locomo_recall.message_id`` gives the turns, and the
session's date (as ``oam ingest`` reads it) as timestamp. Observations without
source ids are kept, without sources.

Usage (from the repository root)::

    python bench/locomo_observations.py \\
        --data ../shared/data/locomo/locomo_dev.json --out /tmp/observations.jsonl

The LoCoMo files are CC BY-NC 4.0: write the output outside this repository.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from oam_core.ingest import IngestError, load_conversations

_DIA_ID = re.compile(r"D\d+:\d+")
_SESSION = re.compile(r"session_(\d+)_observation")


def dia_ids(source: Any) -> list[str]:
    """The dialog ids an observation names: ``"D1:3"`` -> ``["D1:3"]``; a list, or a
    string naming several (``"D26:14, D26:34"``), each id once in order; anything
    else ``[]``.

    Args:
        source: The observation's second element.
    """
    if isinstance(source, str):
        found = _DIA_ID.findall(source)
    elif isinstance(source, list):
        found = [d for item in source for d in dia_ids(item)]
    else:
        found = []
    return list(dict.fromkeys(found))


def session_times(data: Path) -> dict[tuple[str, str], str]:
    """``(sample_id, session number) -> timestamp`` of every session, as ``oam ingest``
    reads LoCoMo (ISO-8601 UTC).

    Raises:
        IngestError: for unreadable data.
    """
    times: dict[tuple[str, str], str] = {}
    for conversation in load_conversations(data):
        number = conversation.thread_id.rsplit("-s", 1)[-1]
        stamps = [m.get("timestamp") for m in conversation.messages if m.get("timestamp")]
        if stamps and conversation.sample_id is not None:
            times[conversation.sample_id, number] = str(stamps[0])
    return times


def observations(data: Path) -> Iterator[dict[str, Any]]:
    """The memories JSONL rows of every observation in ``data`` (module docstring), by
    sample, session, speaker and order.

    Raises:
        ValueError: for a file that is not LoCoMo JSON with observations.
    """
    try:
        samples = json.loads(data.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{data}: cannot read LoCoMo JSON ({exc})") from exc
    times = session_times(data)
    if not isinstance(samples, list):
        raise ValueError(f"{data}: expected a list of LoCoMo samples")
    for sample in samples:
        sample_id = str(sample.get("sample_id"))
        sessions = sample.get("observation")
        if not isinstance(sessions, dict):
            raise ValueError(f"{data}: sample {sample_id} has no observation object")
        for number, key in sorted((_session_number(k), k) for k in sessions):
            for facts in sessions[key].values():
                for fact in facts:
                    text = fact[0] if isinstance(fact, list) and fact else None
                    if not isinstance(text, str) or not text.strip():
                        continue
                    sources = dia_ids(fact[1:])
                    yield {
                        "sample_id": sample_id,
                        "content": text.strip(),
                        "record_type": "memory",
                        "source_message_ids": [f"{sample_id}:{d}" for d in sources],
                        "timestamp": times.get((sample_id, str(number))),
                    }


def _session_number(key: str) -> int:
    """``"session_12_observation"`` -> 12.

    Raises:
        ValueError: for another key.
    """
    found = _SESSION.fullmatch(key)
    if found is None:
        raise ValueError(f"unexpected observation key {key!r}")
    return int(found[1])


def main(argv: Sequence[str] | None = None) -> int:
    """Write the JSONL; print how many memories; return an exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo JSON file")
    parser.add_argument("--out", type=Path, required=True, help="memories JSONL to write")
    args = parser.parse_args(argv)
    try:
        rows = list(observations(args.data))
    except (IngestError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with args.out.open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row) + "\n" for row in rows)
    print(f"wrote {len(rows)} memories to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
