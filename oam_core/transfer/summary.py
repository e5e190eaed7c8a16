"""``TransferSummary``: what an export, import or copy did (docs/transfer.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

from oam_core.errors import InvalidArgumentError


@dataclass(frozen=True)
class TransferSummary:
    """What ``export_store``, ``import_store`` or ``copy_store`` did.

    Attributes:
        records: Rows written (import, copy) or exported, per record type; threads
            count under ``"thread"``.
        search_rows: Search rows (chunks) written or exported.
        skipped_expired: Records left out because they had expired.
        skipped_existing: Records left out because the target held their id
            (``on_conflict="skip"``).
        bytes: Bytes of the dump written (export: as stored, compressed or not) or
            read (import: uncompressed); 0 for a copy.
        seconds: Wall-clock time of the call, in seconds.
    """

    records: dict[str, int] = field(default_factory=dict)
    search_rows: int = 0
    skipped_expired: int = 0
    skipped_existing: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """All rows counted in ``records``."""
        return sum(self.records.values())

    def line(self) -> str:
        """One line for people: ``1200 rows (thread 10, message 1000, fact 190), ...``."""
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.records.items()))
        return (
            f"{self.total} rows ({kinds or 'none'}), {self.search_rows} search rows, "
            f"{self.skipped_existing} skipped as existing, {self.skipped_expired} skipped "
            f"as expired, {self.bytes} bytes in {self.seconds:.2f} s"
        )


class TransferError(InvalidArgumentError):
    """A dump could not be read or written past some point (a malformed line, an id
    that clashes, a truncated file). ``summary`` says what was committed before the
    failing batch; the target holds exactly that (docs/transfer.md#summaries-and-errors).

    Args:
        message: What went wrong, naming the line number or the id.
        summary: What was committed before.
    """

    def __init__(self, message: str, summary: TransferSummary) -> None:
        super().__init__(f"{message} (committed before it: {summary.line()})")
        self.summary = summary
