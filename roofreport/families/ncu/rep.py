"""Binary Nsight Compute reports (`.ncu-rep`, and the older `.nsight-cuprof-report`), read with
NVIDIA's `ncu_report` module: the `ncu-report` wheel, which the optional extra
`roofreport[ncu-rep]` installs (the wheel is NVIDIA's, under NVIDIA's own licence: the core never
needs it).

The module gives every result (action) of every range of the report with its metrics by name,
unrounded, in base units. This reader lays them out as the raw page that
`ncu --import FILE --csv --page raw --print-units base` prints (one row per result: the launch's
identity columns, then one column per metric, the units in a row of their own) and hands that
page to the raw-page reader of the CSV exports (`csv_tables.read_raw`): the same column
roles, metric names, units, scaling and tables as an export of the same report, so
`enrich/counters.py` derives FLOPs, bytes, durations, clocks and ceilings alike.

What the module spells otherwise than the export: the identity columns are `launch__*`
metrics (context, stream, device, grid and block dimensions); the kernel name is asked for
demangled, as ncu prints it; units are spelled as ncu prints base units (`ns` -> `nsecond`,
`hz` -> `cycle/second`, `byte/s` -> `byte/second`). Section entries that are not metrics
(`group:...`, `breakdown:...`) are left out, as the export leaves them out. A result's NVTX
ranges become its region. The module does not tell which ncu wrote the report: the report's
`Nsight Compute Target` property holds it as text, read here.

Damage: the module refuses nothing. A truncated or damaged report opens with fewer results or
none, and its complaints go to the process's stderr: they are caught and become
`ncu.report-format` warnings. A result without a name is damaged: the others are kept and the
file is read in part (its error says how many were lost); a report without a readable result
is an error for the file.
"""

from __future__ import annotations

import math
import mmap
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import polars as pl

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.ncu import FAMILY, REPORT_EXTRA, REPORT_MODULE
from roofreport.families.ncu.csv_tables import read_raw, roles_of
from roofreport.families.spec import ParseResult

# Raw-page identity column -> the metric that holds it (column names as ncu's CSV header).
_IDENTITY = {"Context": "launch__context_id", "Stream": "launch__stream_id",
             "Device": "launch__device_id"}
_DIMENSIONS = {"Grid Size": "launch__grid_dim_", "Block Size": "launch__block_dim_"}
_COLUMNS = ["ID", "Kernel Name", *_IDENTITY, *_DIMENSIONS]
# The module's spelling of a base unit -> ncu's printed one (a `/s` rate: `/second`).
_UNITS = {"ns": "nsecond", "us": "usecond", "ms": "msecond", "s": "second", "hz": "cycle/second"}
# How the module's C++ logging (absl) opens a line: severity, date, time, thread, file:line].
_LOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [^\]]*\] ?")
_TARGET = b"Nsight Compute Target"  # the report property that holds ncu's version


def parse_rep(path: Path, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    try:
        page = _read_page(path, result)
    except ParseError as exc:
        result.error = exc
        return result
    names, table = page.table()
    read_raw(table, roles_of(names), result, _NoLines(str(path)), decimal_comma=False)
    _add_regions(result, page.regions)
    result.tool_version = tool_version(path)
    if page.damaged:  # the results read are kept: a partial read
        result.error = ParseError(
            f"{len(page.damaged)} of {len(page.damaged) + len(page.rows)} results of this report "
            f"could not be read (result {page.damaged[0]} first; the report is damaged or "
            "truncated); the others are kept")
    return result


def _read_page(path: Path, result: ParseResult) -> _Page:
    """The report's raw page, with the module's complaints as warnings; ParseError when the
    module is missing or could read no result."""
    module = _module()
    failure = None
    with _stderr_captured() as said:
        try:
            page = _Page.read(module.load_report(str(path)), module.IMetric)
        except Exception as exc:  # noqa: BLE001 - NVIDIA's module: its failure is the file's
            failure = f"{type(exc).__name__}: {exc}"
    complaints = _complaints(said)
    for complaint in complaints[:5]:
        result.warn("ncu.report-format", f"ncu_report: {complaint}")
    if failure:
        raise ParseError(f"NVIDIA's ncu_report module could not read this report ({failure})")
    if not page.rows:
        because = f" ({complaints[0]})" if complaints else ""
        raise ParseError(f"no result of this Nsight Compute report could be read: it is "
                         f"truncated or damaged, or newer than ncu_report {_version()}{because}")
    return page


def _module():
    """NVIDIA's module, imported on first use (50 MB of shared libraries)."""
    try:
        import ncu_report  # the optional extra: imported here only
    except ImportError as exc:
        raise ParseError(
            f"reading a binary Nsight Compute report needs NVIDIA's `{REPORT_MODULE}` module "
            f"(`pip install 'roofreport[{REPORT_EXTRA}]'`), which could not be loaded here "
            f"({type(exc).__name__}: {exc}); or export the report with "
            "`ncu --import FILE --csv --page raw > FILE.csv`") from None
    return ncu_report


def _version() -> str:
    try:
        return version("ncu-report")
    except PackageNotFoundError:  # the module without its wheel's metadata
        return "(version unknown)"


# -- the raw page ----------------------------------------------------------------------------

class _Page:
    """The raw page of a report: `rows` (column -> printed text, one per readable result),
    `units` (metric -> printed unit), `regions` (launch id -> NVTX path or None), `damaged`
    (launch ids of the results that could not be read)."""

    def __init__(self, kinds) -> None:
        self.rows: list[dict[str, str]] = []
        self.damaged: list[int] = []
        self.units: dict[str, str] = {}
        self.regions: dict[int, str | None] = {}
        self._numbers = {kinds.ValueKind_FLOAT, kinds.ValueKind_DOUBLE}
        self._integers = {kinds.ValueKind_UINT32, kinds.ValueKind_UINT64}
        self._string = kinds.ValueKind_STRING

    @classmethod
    def read(cls, context, kinds) -> _Page:
        """Every result of every range, in the report's order; launch ids count them all, as
        the `ID` column of an export does. A result without a name is damaged: left out."""
        page = cls(kinds)
        for launch_id, action in enumerate(_actions(context)):
            name = action.name(action.NameBase_DEMANGLED)
            if not name:
                page.damaged.append(launch_id)
                continue
            page.rows.append({"ID": str(launch_id), "Kernel Name": name, **page._metrics(action)})
            page.regions[launch_id] = _nvtx_path(action)
        return page

    def _metrics(self, action) -> dict[str, str]:
        row = {}
        for name in action.metric_names():
            if ":" in name:  # `group:`/`breakdown:` list a section's metrics; not metrics
                continue
            metric = action.metric_by_name(name)
            text = self._text(metric)
            if text:
                row[name] = text
                self.units.setdefault(name, printed_unit(metric.unit()))
        for column, metric_name in _IDENTITY.items():
            if metric_name in row:
                row[column] = row[metric_name]
        for column, prefix in _DIMENSIONS.items():
            sizes = [row.get(prefix + axis) for axis in "xyz"]
            if all(sizes):
                row[column] = f"({', '.join(sizes)})"
        return row

    def _text(self, metric) -> str | None:
        """The value as printed in base units (None: the metric has no value; an instanced
        metric's instances are left out, as the raw page leaves them out)."""
        if not metric.has_value():
            return None
        kind = metric.kind()
        if kind in self._numbers:
            return number_text(metric.as_double())
        if kind in self._integers:
            return str(metric.as_uint64())
        if kind == self._string:
            return metric.as_string()
        return None

    def table(self) -> tuple[tuple[str, ...], pl.DataFrame]:
        """(header names, the page as positional Categorical columns `c0..cN` and `line_no`):
        the units row first (no ID), then one row per result. An absent metric is an empty
        cell, as in an export, so no row reads as cut short; an absent identity is null.
        `line_no` is the result's number (from 1)."""
        metrics = sorted(self.units)
        names = (*_COLUMNS, *metrics)
        rows = [self.units, *self.rows]
        columns = {f"c{i}": [row.get(name) for row in rows] for i, name in enumerate(_COLUMNS)}
        start = len(_COLUMNS)
        columns |= {f"c{start + i}": [row.get(name, "") for row in rows] for i, name in enumerate(metrics)}
        line_no = [0, *(int(row["ID"]) + 1 for row in self.rows)]
        frame = pl.DataFrame(columns, schema={c: pl.Categorical for c in columns})
        return names, frame.with_columns(line_no=pl.Series(line_no, dtype=pl.Int64))


def _actions(context) -> Iterator:
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            yield report_range.action_by_idx(action_index)


def printed_unit(unit: str) -> str:
    """ncu's printed spelling of the module's base unit (`hz` -> `cycle/second`)."""
    unit = unit.strip()
    if unit in _UNITS:
        return _UNITS[unit]
    if unit.endswith("/s"):
        return unit[:-2] + "/second"
    return unit


def number_text(value: float) -> str:
    """A number as text that reads back exactly: integers without a fraction, `nan` for
    a value the profiler could not compute (read as no value)."""
    if not math.isfinite(value):
        return "nan"
    if value.is_integer() and abs(value) < 2 ** 63:
        return str(int(value))
    return repr(value)


class _NoLines:
    """What `read_raw` may ask of a file's lines (the text of a short row): a report's page
    has no short rows, and no lines."""

    def __init__(self, display: str) -> None:
        self.display = display

    def texts(self, line_nos: list[int]) -> list[str]:
        return ["" for _ in line_nos]


# -- NVTX ------------------------------------------------------------------------------------

def _nvtx_path(action) -> str | None:
    """The result's NVTX ranges, domain by domain (push/pop stack outermost first, then the
    start/end ranges), joined by `/` as the region of the CSV and text exports."""
    state = action.nvtx_state()
    if state is None:
        return None
    names = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is not None:
            names += [*domain.push_pop_ranges(), *domain.start_end_ranges()]
    return "/".join(names) or None


def _add_regions(result: ParseResult, regions: dict[int, str | None]) -> None:
    kernels = result.tables.get("kernels")
    paths = {launch: path for launch, path in regions.items() if path}
    if kernels is None or not paths:
        return
    region = kernels["launch_id"].replace_strict(paths, default=None, return_dtype=pl.String)
    result.tables["kernels"] = kernels.with_columns(region=region)


# -- what the report says of itself ----------------------------------------------------------

def tool_version(path: Path) -> str | None:
    """The version of ncu that wrote the report (`2024.3.2.0`), where the report names it."""
    version = re.compile(grammar.load("ncu").terminal("TOOL_VERSION").encode())
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(_TARGET)
        if at < 0:
            return None
        # the property's value follows its name, after a field tag and its length
        found = version.search(data, at + len(_TARGET), at + len(_TARGET) + 64)
        return found.group().decode() if found else None


@contextmanager
def _stderr_captured() -> Iterator[list[str]]:
    """The lines C++ code writes to the process's stderr meanwhile (protobuf's complaints
    about a damaged report), kept from the user's terminal: the CLI alone talks to users.
    A process without a stderr to redirect captures nothing."""
    said: list[str] = []
    if sys.stderr is not None:
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield said
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            said += sink.read(1 << 16).decode("utf-8", errors="replace").splitlines()


def _complaints(said: list[str]) -> list[str]:
    """The messages of captured log lines, without the logger's own notices and prefixes."""
    messages = (_LOG_PREFIX.sub("", line).strip() for line in said)
    return [m for m in messages if m and "absl::InitializeLog" not in m]
