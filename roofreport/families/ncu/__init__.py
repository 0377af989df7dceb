"""Nsight Compute (ncu / nv-nsight-cu-cli) logs: which kind of ncu output a file is, and the
specs that read each kind.

Kinds: CSV exports (details page in every header layout, raw page) read by `csv.py`; text
pages (details in the 2019-2022 "wide" and 2023+ "table" layouts, raw page, per-kernel and
per-gpu summaries, runs that profiled nothing) read by `text.py`; binary reports
(`.ncu-rep`, `.nsight-cuprof-report`) read by `rep.py` through NVIDIA's `ncu_report`
module when the optional extra `roofreport[ncu-rep]` installed it. Sniffing looks only at the
bounded head and uses the grammar's own line rules (`grammars/ncu.lark`).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib.util import find_spec

import polars as pl

from roofreport import grammar
from roofreport.families.common.textio import Head
from roofreport.families.spec import DeferredReader, FormatSpec

FAMILY = "ncu"

# Cheap substrings, one of which every ncu text output holds: gate the grammar classification.
_TEXT_MARKERS = ("==PROF==", "==ERROR==", "==WARNING==", "    Section: ", ", Context ",
                 " invocations", ", Invocations ", "Metric Name")


@lru_cache(maxsize=1)
def _header_start() -> re.Pattern:
    syntax = grammar.load("ncu")
    return re.compile(syntax.terminal("HEADER_FIRST") + ",")


# -- CSV -------------------------------------------------------------------------------------

def sniff_csv(head: Head) -> str | None:
    """A CSV header (`"ID",...` or era 0's `"Kernel Name","Kernel Time",...`) in the head."""
    start = _header_start()
    for line in head.lines:
        if start.match(line):
            # (only for a file with an ncu CSV header)
            from roofreport.families.ncu import csv as ncu_csv

            return ncu_csv.variant_for(ncu_csv.header_names_quick(line))
    tail = head.text.rsplit("\n", 1)[-1] if head.truncated else ""
    if start.match(tail):
        return "csv raw"  # a header longer than the head: only the raw page has those
    return None


# -- text ------------------------------------------------------------------------------------

def sniff_text(head: Head) -> str | None:
    if not any(marker in head.text for marker in _TEXT_MARKERS):
        return None
    from roofreport.families.ncu import status as ncu_status  # (a file with an ncu marker)

    syntax = grammar.load("ncu")
    lines = pl.DataFrame({"text": head.lines}, schema={"text": pl.String})
    lines = lines.with_columns(kind=syntax.classify(pl.col("text"), "line"))
    kinds = set(lines["kind"].unique().to_list())
    # Without results, ncu's own status messages must open a line: quoted in a table or a
    # note (a manifest, a README), they are someone writing about ncu.
    status = lines.filter((pl.col("kind") == "status_line") & pl.col("text").str.starts_with("=="))
    own_status = status["text"].str.contains(ncu_status.NCU_ONLY.pattern).any()
    if not ({"kernel_line", "section_line"} & kinds or own_status):
        return None
    return _text_variant(lines, kinds, syntax, head)


def _text_variant(lines: pl.DataFrame, kinds: set[str], syntax: grammar.Grammar, head: Head) -> str:
    from roofreport.families.ncu import text as ncu_text

    heads = ncu_text.kernel_fields(lines.filter(pl.col("kind") == "kernel_line"), syntax)
    if heads["block_size"].is_not_null().any():
        return "text summary per-gpu" if "device_line" in kinds else "text summary per-kernel"
    if heads["invocations"].is_not_null().any():
        return "text summary 2023+"
    if "raw_rule_line" in kinds and heads.height:
        return "text raw page"
    if "table_title_line" in kinds and heads.height:
        return "text 2023+"
    if heads.height or "section_line" in kinds:
        return "text 2019-2022"
    return "csv (no results)" if head.path.suffix.lower() == ".csv" else "text (no results)"


# -- binary reports --------------------------------------------------------------------------

REPORT_MAGIC = b"NVR\x00"      # every .ncu-rep and .nsight-cuprof-report starts so
REPORT_MODULE = "ncu_report"   # NVIDIA's reader, from the `ncu-report` wheel
REPORT_EXTRA = "ncu-rep"       # pip install 'roofreport[ncu-rep]' brings it


def report_module_installed() -> bool:
    """NVIDIA's `ncu_report` module can be imported (looked up, not imported: it is 50 MB)."""
    try:
        return find_spec(REPORT_MODULE) is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return False


def sniff_rep(head: Head) -> str | None:
    """A binary report, when the module that reads it is installed."""
    if head.raw.startswith(REPORT_MAGIC) and report_module_installed():
        return "ncu-rep binary report"
    return None


SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="ncu-csv", sniff=sniff_csv,
               parse=DeferredReader("roofreport.families.ncu.csv", "parse_csv"),
               marks=('"ID","Process ID"', '"Kernel Name","Kernel Time"')),
    FormatSpec(family=FAMILY, name="ncu-text", sniff=sniff_text,
               parse=DeferredReader("roofreport.families.ncu.text", "parse_text"),
               marks=("==PROF==", "==ERROR==", ", Context ")),
]

BINARY_SPECS: list[FormatSpec] = [
    FormatSpec(family=FAMILY, name="ncu-rep", sniff=sniff_rep,
               parse=DeferredReader("roofreport.families.ncu.rep", "parse_rep"), binary=True),
]
