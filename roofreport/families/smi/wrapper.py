"""CSV files written by wrappers around nvidia-smi or NVML (shell loops with their own header,
pynvml scripts): `timestamp,gpu_index,temperature_C,utilization_gpu_percent,power_W`.

Read when the header names at least one measurement `fields.WRAPPER_NAMES` knows, no
quantity twice (a file with both `gpu` and `index` is ambiguous), and more known columns than
unknown ones; unknown columns are skipped with a warning, never guessed at. Anything else:
`sniff` returns None and the file is skipped as not a log.
The bulk is read by polars' CSV reader, which also copes with quoted cells holding a newline
(`"26.11\n0"`: the first line is the value, the rest is reported).
"""

from __future__ import annotations

import io
import re

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common import numbers
from roofreport.families.common.textio import Document, Head
from roofreport.families.common.times import parse_datetime
from roofreport.families.smi.fields import MEASUREMENTS, WRAPPER_NAMES
from roofreport.families.spec import ParseResult

VARIANT = "wrapper csv"


def normalise(name: str) -> str:
    """`temperature_C` -> temperature_c, `gpu_util(%)` -> gpu_util, `memory.used` -> memory_used."""
    name = re.sub(r"\(.*?\)|\[.*?\]", "", name.strip().strip('"').lower())
    return re.sub(r"[.\s-]+", "_", name.strip()).strip("_")


def mapping(header: str) -> dict[str, str | None] | None:
    """Raw column name -> target (`?` for a name WRAPPER_NAMES does not know), or None when
    the header is not a readable wrapper header: no measurement, a quantity claimed by two
    columns, or as many unknown columns as known ones (then it is some other table)."""
    names = header.split(",")
    if len(names) < 2:
        return None
    targets = {n: WRAPPER_NAMES.get(normalise(n), "?") for n in names}
    known = [t for t in targets.values() if t not in (None, "?")]
    unknown = sum(1 for t in targets.values() if t == "?")
    if len(known) != len(set(known)) or unknown >= len(known):
        return None
    if not any(t in MEASUREMENTS for t in known):
        return None
    return targets


def sniff(head: Head) -> str | None:
    lines = [line for line in head.lines if line.strip()]
    if len(lines) < 2 or "," not in lines[0]:
        return None
    return VARIANT if mapping(lines[0]) else None


def parse(doc: Document, result: ParseResult) -> pl.DataFrame:
    header = doc.text().split("\n", 1)[0]
    targets = mapping(header) or {}
    try:
        frame = _read(doc.data)
    except pl.exceptions.PolarsError as exc:
        frame, bad_line = _readable_part(doc.data)
        reason = str(exc).splitlines()[0]
        if frame is None:
            result.error = ParseError(f"wrapper CSV unreadable: {reason}",
                                      path=doc.display, line=1, column=1, text=header)
            return pl.DataFrame()
        result.warn("smi.bad-row", f"{doc.display}:{bad_line}: the CSV is damaged from this line "
                    f"on ({reason}): the rows before it are read, the rest is not", line=bad_line)
    frame = _without_repeated_header(_with_source_lines(frame))
    _warn_multiline(frame, doc, result)
    cols = [pl.col("source_line")]
    for name, target in targets.items():
        if target == "?":
            result.warn("smi.unknown-column", f"wrapper column {name.strip()!r} is no quantity "
                        "roofreport knows: not read", line=1)
        if target in (None, "?") or name not in frame.columns:
            continue
        cols.append(_column(pl.col(name).str.split("\n").list.first().str.strip_chars(), target))
    return frame.select(cols).with_columns(part=pl.lit("wrapper"), block=pl.lit(0, pl.Int64))


def _read(data: bytes) -> pl.DataFrame:
    return pl.read_csv(io.BytesIO(data), infer_schema=False, truncate_ragged_lines=True,
                       encoding="utf8-lossy")


def _readable_part(data: bytes) -> tuple[pl.DataFrame | None, int]:
    """The rows of the longest run of whole records from the start that the CSV reader takes
    (a damaged file: an open quote, a cut cell), found by bisection over the records' starts
    (lines where the quotes before are balanced), and the line where the damage begins; None
    when not even the header reads."""
    starts, quotes, offset = [], 0, 0   # (byte offset, line number) of each record's start
    for line_no, line in enumerate(data.splitlines(keepends=True), 1):
        if quotes % 2 == 0:
            starts.append((offset, line_no))
        quotes += line.count(b'"')
        offset += len(line)
    good, low, high = None, 1, len(starts) - 1   # starts[0] is the header's line
    while low <= high:
        middle = (low + high) // 2
        try:
            frame = _read(data[:starts[middle][0]])
        except pl.exceptions.PolarsError:
            high = middle - 1
            continue
        good, low = (frame, middle), middle + 1
    if good is None:
        return None, 1
    frame, index = good
    return frame, starts[index][1]


def _column(cell: pl.Expr, target: str) -> pl.Expr:
    if target == "_time":
        return parse_datetime(cell).alias("timestamp")
    if target == "_elapsed":
        return numbers.parse_number(cell).alias("elapsed_s")
    if target == "_bus":
        return cell.alias("gpu_key")
    if target == "gpu_index":
        return cell.cast(pl.Int64, strict=False).alias(target)
    if target == "gpu_name":
        return cell.alias(target)
    return numbers.parse_number(cell).alias(target)


def _with_source_lines(frame: pl.DataFrame) -> pl.DataFrame:
    """Line of each record: the header is line 1; a quoted cell with newlines spans more."""
    extra = pl.sum_horizontal([pl.col(c).str.count_matches("\n").fill_null(0) for c in frame.columns])
    return frame.with_columns(
        source_line=(pl.int_range(pl.len()) + 2 + extra.cum_sum() - extra).cast(pl.Int64))


def _without_repeated_header(frame: pl.DataFrame) -> pl.DataFrame:
    """The header printed again (a loop restarted, two files concatenated) is no sample: every
    cell of such a row is its column's name."""
    names = [name for name in frame.columns if name != "source_line"]
    repeat = pl.all_horizontal([pl.col(name).str.strip_chars().eq_missing(name.strip()) for name in names])
    return frame.filter(~repeat)


def _warn_multiline(frame: pl.DataFrame, doc: Document, result: ParseResult) -> None:
    for col in frame.columns:
        if col == "source_line":
            continue
        multi = frame.filter(pl.col(col).str.contains("\n", literal=True))
        if multi.height:
            line = multi["source_line"][0]
            result.warn("smi.multiline-cell", f"{multi.height} cells of {col.strip()!r} hold a "
                        "line break (the wrapper captured several lines of nvidia-smi output); "
                        "the first line is kept", line=line)
