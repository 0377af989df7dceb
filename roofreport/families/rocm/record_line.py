"""What tells rocprofv2's records printed on stdout from a program's own output: the sniff's
questions, asked of a few head lines (`records.py` reads the whole log; the syntax is
`grammars/rocm.lark` `record_line`).
"""

from __future__ import annotations

import re

from roofreport import grammar
from roofreport.families.rocm.columns import counter_columns

# The keys a record line starts with: what tells one from the program's output.
RECORD_STARTS = ("Dispatch_ID(", "Domain(")


def looks_like_record(text: str) -> bool:
    """A line of the records (the sniff's question, on a few head lines)."""
    return text.startswith(RECORD_STARTS) and bool(grammar.load("rocm").pattern("record_line").match(text.rstrip()))


def variant_of(lines: list[str]) -> str:
    """`rocprofv2 records`, and ` (counters)` when the dispatch records carry counters."""
    field = re.compile(grammar.load("rocm").regex("record_field", anchored=False))
    keys = [found["record_key"] for text in lines if text.startswith(RECORD_STARTS[0]) for found in field.finditer(text)]
    return "rocprofv2 records" + (" (counters)" if counter_columns(list(dict.fromkeys(keys))) else "")
