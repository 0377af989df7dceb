"""A FlopCounterMode count saved beside a trace: the model FLOPs of one training step.

`torch.utils.flop_counter.FlopCounterMode` counts the FLOPs of the code run under it; its
`get_flop_counts()` is a dict of scope ("Global", then each module) -> operator -> FLOPs. Saved
as JSON with the operators as text, it reads

    {"Global": {"aten.mm": 62914560, "aten.addmm": 25165824, ...}, "GPT": {...}, ...}

and the step's FLOPs are the sum of "Global". A file may instead give the total alone,
`{"total_flops": 95420416}` (`get_total_flops()`), and either layout may say over how many steps
it counted (`"steps": 4`; one when absent). `tests/data/make_pytorch_oracles.py` writes such
files. Each gives `metrics` rows: the per-operator counts of "Global" (section "flop counter",
metric = the operator, unit FLOP) and "model FLOPs per step", which the analysis takes as the
model FLOPs of the steps of every trace in the same folder (`analysis/steps.py`), before the
FLOPs it counts from the trace's shapes.
"""

from __future__ import annotations

import json
import math

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.pytorch.decode import long_integer
from roofreport.families.spec import ParseResult

FAMILY = "pytorch"
SECTION = "flop counter"
PER_STEP = "model FLOPs per step"

def parse_counter(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    text = doc.data.decode("utf-8", errors="replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:   # (JSONDecodeError, or a number too long)
        result.error = _bad_json(exc, text, doc.display)
        return result
    if not isinstance(data, dict):
        result.error = ParseError("not a FlopCounterMode count: the JSON is not an object", path=doc.display,
                                  line=1, column=1)
        return result
    operators = data.get("Global") if isinstance(data.get("Global"), dict) else {}
    counts = {str(op): float(n) for op, n in operators.items() if _number(n)}
    total = data.get("total_flops") if _number(data.get("total_flops")) else sum(counts.values()) if counts else None
    steps = data.get("steps") if _number(data.get("steps")) and data.get("steps") > 0 else 1
    if total is None:
        result.error = ParseError("a FlopCounterMode count without a total or Global counts", path=doc.display)
        return result
    rows = [(op, value) for op, value in counts.items()] + [(PER_STEP, float(total) / steps)]
    result.add("metrics", pl.DataFrame(
        {"metric": [name for name, _ in rows], "value": [value for _, value in rows]},
        schema={"metric": pl.String, "value": pl.Float64}).with_columns(
        source_line=pl.lit(1, pl.Int64), section=pl.lit(SECTION), unit=pl.lit("FLOP")))
    return result


def _bad_json(exc: Exception, text: str, display: str) -> ParseError:
    if isinstance(exc, (json.JSONDecodeError, RecursionError)):
        line, column = (exc.lineno, exc.colno) if isinstance(exc, json.JSONDecodeError) else (None, None)
        return ParseError(f"bad JSON ({exc})", path=display, line=line, column=column)
    found = long_integer(text)
    if found is None:
        raise exc
    at, what = found
    return ParseError(f"bad JSON ({what})", path=display, line=text.count("\n", 0, at) + 1,
                      column=at - text.rfind("\n", 0, at))


def _number(value) -> bool:
    """A count: a number, not negative, that a float holds (10^400 is none)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value)) and value >= 0
    except OverflowError:
        return False
