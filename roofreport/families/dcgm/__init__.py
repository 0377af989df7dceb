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

from roofreport import grammar
from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "dcgm"
DMON, DMON_LEGACY = "dmon", "dmon (DCGM 1.x-2.3 layout)"
FIELD_CSV, EXPORTER, FAILED = "field-value csv", "exporter scrape", "failed run"

_EXPORTER_KINDS = {"exporter_comment_line", "exporter_sample_line", "blank_line", "date_line",
                   "command_line"}
_MIN_EXPORTER_SHARE = 0.8


def classify(line: str) -> str:
    """The kind of one line (`grammars/dcgm.lark`'s `line`); the grammar is loaded only when a
    head holds a DCGM tell-tale."""
    return grammar.load("dcgm").classify_line(line)


def sniff(head: Head) -> str | None:
    """A DCGM file shows a dmon header pair, a field-value CSV header naming a GPU, a time,
    a field and a value, or Prometheus lines of `DCGM_FI_` metrics (and little else). Each
    test runs only on heads holding its tell-tale text: most files are none of them."""
    text, lines = head.text, head.lines
    if "Entity" in text:
        found = _dmon(lines)
        if found:
            return found
    first = next((line for line in lines if line.strip()), "")
    if "," in first and classify(first) == "field_csv_header_line" and csv_roles(first) is not None:
        return FIELD_CSV
    if "DCGM_FI_" in text and _exporter(lines, [classify(line) for line in lines]):
        return EXPORTER
    if "dcgmi" in text:
        kinds = {classify(line) for line in lines if line.strip()}
        if kinds <= {"command_line", "failure_line"} and "failure_line" in kinds:
            return FAILED
    return None


def _dmon(lines: list[str]) -> str | None:
    for index, line in enumerate(lines):
        if "Entity" in line and classify(line) == "dmon_header_line" \
                and "dmon_units_line" in [classify(after) for after in lines[index + 1:index + 3]]:
            return DMON_LEGACY if line.startswith("# Entity") else DMON
    return None


def _exporter(lines: list[str], kinds: list[str]) -> bool:
    names = [grammar.load("dcgm").pattern("exporter_sample_line").match(line).group("metric_name")
             for line, kind in zip(lines, kinds) if kind == "exporter_sample_line"]
    if not any(name.startswith("DCGM_FI_") for name in names):
        return False
    known = sum(kind in _EXPORTER_KINDS for kind in kinds)
    return known >= _MIN_EXPORTER_SHARE * len(kinds)


def csv_roles(header: str) -> list[str] | None:
    """The role of each column of a field-value CSV header (`gpu`, `time`, `field`, `value`),
    or None when the header does not name each of them exactly once."""
    syntax = grammar.load("dcgm")
    roles = {"CSV_GPU": "gpu", "CSV_TIME": "time", "CSV_FIELD": "field", "CSV_VALUE": "value"}
    try:
        tokens = syntax.tokens(header.strip(), "field_csv_header_line")
    except Exception:  # the line regex let it through, Lark did not: not a header
        return None
    found = [roles[t.type] for t in tokens if t.type in roles]
    if sorted(found) != sorted(roles.values()):
        return None
    return found


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="dcgm", sniff=sniff,
               parse=DeferredReader("roofreport.families.dcgm.read", "parse"),
               marks=("#Entity", "# Entity", "DCGM_FI_")),
]
