"""Files users hand roofreport to change its defaults (GPU peaks, category rules, estimates):
TOML with `[[table]]` entries, or delimited text with a header row. Problems are usage errors."""

from __future__ import annotations

import csv
import io
import tomllib
from pathlib import Path

from roofreport.errors import UsageError


def read_records(path: Path, table: str, what: str, delimiter: str = ",") -> list[dict]:
    """The entries of a user file: its TOML `[[table]]` tables, or the rows of a CSV/TSV."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise UsageError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if path.suffix.lower() != ".toml":
        return [dict(row) for row in csv.DictReader(io.StringIO(text), delimiter=delimiter)]
    try:
        rows = tomllib.loads(text).get(table, [])
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{what} {path}: {exc}") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise UsageError(f"{what} {path}: expected [[{table}]] tables")
    return [dict(r) for r in rows]
