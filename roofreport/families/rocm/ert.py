"""The Empirical Roofline Toolkit's database (`roofline.json`), the measured ceilings rocprof-compute's
and ERT's own microbenchmarks give a GPU -> `metrics` (section "roofline"), read by the model's
one measured-peaks path (`model/roofline.measured_peaks`) as `roofline.csv` is.

ERT's `ert_core.py` (`build_database`) writes it with `json.dump(..., indent=3)`:

    {"empirical": {"metadata": {...},
                   "gflops": {"data": [["GFLOPs", 22345.67]], "metadata": {"ERT_PRECISION": "FP64", ...}},
                   "gbytes": {"data": [["L1", 11002.3], ["L2", 4120.8], ["DRAM", 1339.2]], "metadata": {...}}},
     "spec": {"gflops": {"data": [...]}, "gbytes": {"data": [...]}}}

The empirical part is what was measured (GB/s and GFLOP/s); `spec` repeats the configuration's
datasheet figures and is not read. Levels are named by the configuration (`L1`, `L2`, `DRAM`,
`HBM`, `MCDRAM`): the device memory (`DRAM`, `HBM`, `MCDRAM`, `GDDR`) is `HBMBw`, as
rocprof-compute's `roofline.csv` names it, the others `<level>Bw`. The FLOP rate is of the
precision its metadata's `ERT_PRECISION` names (`FP64` -> `FP64Flops`); one measured over
several precisions (a list) is kept as `Flops`, no precision's peak.
"""

from __future__ import annotations

import json
import re

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document, Head
from roofreport.families.rocm import FAMILY
from roofreport.families.spec import ParseResult

VARIANT = "ERT roofline json"
_DEVICE_MEMORY = re.compile(r"(?i)^(?:dram|hbm\d*|mcdram|gddr\d*|device|global)$")
_PRECISION = re.compile(r"(?i)^(fp64|fp32|fp16|bf16|double|single|half)$")
_ALIASES = {"double": "FP64", "single": "FP32", "half": "FP16"}


def sniff(head: Head) -> str | None:
    if head.binary:
        return None
    text = head.text.lstrip("\ufeff \t\r\n")
    if not text.startswith("{") or '"empirical"' not in text[:200]:
        return None
    return VARIANT if '"gflops"' in text or '"gbytes"' in text else None


def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    try:
        document = json.loads(doc.data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        result.error = ParseError(f"not a whole JSON document ({exc.args[0].split(':')[0]}): nothing read",
                                  path=doc.display, line=getattr(exc, "lineno", None), column=getattr(exc, "colno", None))
        return result
    empirical = document.get("empirical") if isinstance(document, dict) else None
    if not isinstance(empirical, dict):
        result.error = ParseError("no \"empirical\" object: not an ERT roofline database", path=doc.display)
        return result
    rows: list[dict] = []
    bad: list[str] = []
    for kind, unit in (("gbytes", "byte/second"), ("gflops", "FLOP/second")):
        part = empirical.get(kind)
        data = part.get("data") if isinstance(part, dict) else None
        if data is None:
            continue
        precision = _precision(part.get("metadata"), empirical.get("metadata"))
        for entry in data if isinstance(data, list) else [data]:
            if not (isinstance(entry, list) and len(entry) == 2 and _number(entry[1]) is not None):
                bad.append(f"{kind}: {entry!r}")
                continue
            label, value = str(entry[0]).strip(), _number(entry[1])
            metric = _bandwidth_name(label) if kind == "gbytes" else (f"{precision}Flops" if precision else "Flops")
            rows.append({"metric": metric, "value": value * 1e9, "unit": unit, "value_text": f"{label} {entry[1]}"})
    for entry in bad:
        result.warn("rocm.bad-row", f"{doc.display}: an ERT entry that is no [name, value] pair ({entry[:80]}): left out")
    if not rows:
        result.error = ParseError("the ERT database holds no measured bandwidth or FLOP rate", path=doc.display)
        return result
    result.add("metrics", pl.DataFrame(rows, schema={"metric": pl.String, "value": pl.Float64, "unit": pl.String,
                                                     "value_text": pl.String})
               .with_columns(section=pl.lit("roofline"), source_line=pl.lit(None, pl.Int64)))
    return result


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") and number > 0 else None


def _bandwidth_name(level: str) -> str:
    return "HBMBw" if _DEVICE_MEMORY.match(level) else f"{re.sub(r'[^A-Za-z0-9]', '', level)}Bw"


def _precision(*metadata: object) -> str | None:
    """The one precision `ERT_PRECISION` names in the metadata (None: none, or several)."""
    for meta in metadata:
        if isinstance(meta, dict) and "ERT_PRECISION" in meta:
            value = meta["ERT_PRECISION"]
            values = {str(v).strip() for v in (value if isinstance(value, list) else [value])}
            if len(values) != 1:
                return None
            found = _PRECISION.match(values.pop())
            return _ALIASES.get(found.group(1).lower(), found.group(1).upper()) if found else None
    return None
