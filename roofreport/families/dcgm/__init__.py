"""NVIDIA DCGM GPU series -> the `samples` table: what sniffing needs, and the specs.

* `dcgmi dmon` tables, DCGM 1.x-2.3 (right-aligned, `# Entity` / `Id`) and 2.4-4.x
  (left-aligned, `#Entity` / `ID`), with `-e` field ids or a `-f` field group (`dmon`);
* field-value CSVs in long form, `GPUId,TimeStampUs,Field,Values`, as DCGM field-watch scripts
  write them (`csv`);
* dcgm-exporter's Prometheus text, one `curl .../metrics` or a loop of them (`exporter`).

The syntax is `grammars/dcgm.lark`; the fields are `fields`. The readers are imported only
when a DCGM file is parsed (`read`).
"""

from __future__ import annotations

import re
from functools import cache

from roofreport import grammar
from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "dcgm"
DMON, DMON_LEGACY = "dmon", "dmon (DCGM 1.x-2.3 layout)"
FIELD_CSV, EXPORTER, FAILED = "field-value csv", "exporter scrape", "failed run"

_EXPORTER_KINDS = {"exporter_comment_line", "exporter_sample_line", "blank_line", "date_line",
                   "command_line"}
_MIN_EXPORTER_SHARE = 0.8


@cache
def _line_regexes() -> tuple[tuple[str, re.Pattern], ...]:
    g = grammar.load("dcgm")
    return tuple((kind, re.compile(g.regex(kind))) for kind in g.alternatives("line"))


@cache
def _rule(name: str) -> re.Pattern:
    return re.compile(grammar.load("dcgm").regex(name))


def classify(line: str) -> str:
    for kind, rx in _line_regexes():
        if rx.match(line):
            return kind
    return "other"


def sniff(head: Head) -> str | None:
    """A DCGM file shows a dmon header pair, a field-value CSV header naming a GPU, a time,
    a field and a value, or Prometheus lines of `DCGM_FI_` metrics (and little else)."""
    if "DCGM_FI_" not in head.text and "Entity" not in head.text and "," not in head.text \
            and "dcgmi" not in head.text:
        return None
    lines = head.lines
    kinds = [classify(line) for line in lines]
    for i, kind in enumerate(kinds):
        if kind == "dmon_header_line" and "dmon_units_line" in kinds[i + 1:i + 3]:
            return DMON_LEGACY if lines[i].startswith("# Entity") else DMON
    texts = [(line, kind) for line, kind in zip(lines, kinds) if kind != "blank_line"]
    if texts and texts[0][1] == "field_csv_header_line" and csv_roles(texts[0][0]) is not None:
        return FIELD_CSV
    if _exporter(lines, kinds):
        return EXPORTER
    if any(k == "command_line" and "dcgmi" in line for line, k in texts) \
            and {k for _, k in texts} <= {"command_line", "failure_line"} \
            and "failure_line" in kinds:
        return FAILED
    return None


def _exporter(lines: list[str], kinds: list[str]) -> bool:
    names = [_rule("exporter_sample_line").match(line).group("metric_name")
             for line, kind in zip(lines, kinds) if kind == "exporter_sample_line"]
    if not any(name.startswith("DCGM_FI_") for name in names):
        return False
    known = sum(kind in _EXPORTER_KINDS for kind in kinds)
    return known >= _MIN_EXPORTER_SHARE * len(kinds)


def csv_roles(header: str) -> list[str] | None:
    """The role of each column of a field-value CSV header (`gpu`, `time`, `field`, `value`),
    or None when the header does not name each of them exactly once."""
    g = grammar.load("dcgm")
    roles = {"CSV_GPU": "gpu", "CSV_TIME": "time", "CSV_FIELD": "field", "CSV_VALUE": "value"}
    try:
        tokens = g.tokens(header.strip(), "field_csv_header_line")
    except Exception:  # the line regex let it through, Lark did not: not a header
        return None
    found = [roles[t.type] for t in tokens if t.type in roles]
    if sorted(found) != sorted(roles.values()):
        return None
    return found


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="dcgm", sniff=sniff,
               parse=DeferredReader("roofreport.families.dcgm.read", "parse")),
]
