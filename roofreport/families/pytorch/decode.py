"""Reading a PyTorch profiler (Kineto) trace file into its events: the JSON layer only.

A Kineto trace is one JSON object (Chrome trace format): metadata keys (`schemaVersion`,
`deviceProperties`, `distributedInfo`, `traceName`, ...) and `traceEvents`, a list of event
objects (`ph`, `cat`, `name`, `pid`, `tid`, `ts` and `dur` in microseconds, `args`). Files are
plain (`.json`, `*.pt.trace.json`) or gzip (`.json.gz`), told by their first bytes.

The file is read as a stream (`source.TextSource`: a few MB of text at a time, gzip inflated
as it goes) and never held whole. The top-level object is walked key by key; `traceEvents` is
decoded in slices of many events: the standard library's decoder reads `[` + a slice that ends
at an event's closing brace + `]`, with an object hook that appends the fields of each complete
event (`ph` "X") of a category roofreport uses to one list per field (`EVENT_FIELDS`) as soon as
it is decoded, and drops every other event (flows, instants, metadata, categories nobody
reads). No event dict outlives its decode, and every `FLUSH_ROWS` kept events the lists become
a typed polars frame, so memory follows the kept events' columns, not the JSON's object tree.
(A slice end is found by searching back for `},{`; one that falls inside a string makes the
slice fail to decode, and those events are then decoded one by one, the hook's rows rolled back
first.) The hook counts the events as it meets them, in file order: an event's position in
`traceEvents` is its `source_line` (JSON has no line per record; HTA's re-written traces are
one line).

Operator calls that do matrix work (`flops.FORMULAS`) keep their FLOPs, worked out from the
shapes the event's `args` carry (`record_shapes=True`), as they are decoded: the shapes
themselves are dropped with the event.

A file that is cut or damaged keeps every event decoded before the damage and its metadata
keys read before `traceEvents` (Kineto writes them first), and the error names the line and
column (`Trace.error`).
"""

from __future__ import annotations

import gc
import itertools
import json
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from roofreport.errors import LogWarning, ParseError
from roofreport.families.pytorch import flops
from roofreport.families.pytorch.source import PIECE, TextSource

# Kineto's event categories (and the 2021 capitalised ones torch 1.8-1.9 wrote, which the
# TensorBoard plugin also reads) -> roofreport's event kind.
CATEGORIES = {
    "kernel": "kernel", "Kernel": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy", "memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset", "memset": "memset",
    "cuda_runtime": "runtime", "Runtime": "runtime", "runtime": "runtime",
    "cuda_driver": "driver", "Driver": "driver", "driver": "driver",
    "user_annotation": "annotation", "User annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation",
    "cpu_op": "cpu_op", "Operator": "cpu_op", "operator": "cpu_op",
    "python_function": "python",
}
KINDS = pl.Enum(sorted(set(CATEGORIES.values())))
# The fields kept of each event, in this order (`args` fields are Kineto's own key names).
EVENT_FIELDS = ("kind", "name", "ts", "dur", "pid", "tid", "device", "context", "stream",
                "correlation", "bytes")
# What a kernel event adds (its `args`), one row per kernel in `Trace.launches`, after its
# source_line: the launch shape, then what CUPTI says of the launch, as Kineto names it.
LAUNCH_FIELDS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM",
                 "warps per SM", "est. achieved occupancy %", "In msg nelems", "Out msg nelems", "Group size",
                 "Collective name", "dtype")
# What a counted operator call adds (`flops.op_flops`), one row per call in `Trace.operators`.
OPERATOR_FIELDS = ("flops", "op_kind", "precision", "flops_source", "causal")
FLUSH_ROWS = 1 << 14     # kept events gathered as Python lists before they become a frame
MAX_VALUE = 64 << 20     # characters one event or metadata value may take
_EMPTY: dict = {}
_TYPES = {"kind": KINDS, "name": pl.String, "ts": pl.Float64, "dur": pl.Float64,
          "device": pl.Int64, "context": pl.Int64, "stream": pl.Int64, "correlation": pl.Int64,
          "bytes": pl.Float64}
_OPERATOR_TYPES = {"flops": pl.Float64, "op_kind": pl.String, "precision": pl.String,
                   "flops_source": pl.String, "causal": pl.Boolean}
_BLANK = re.compile(r"[ \t\n\r]*")
_BOUNDARY = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
_BOUNDARY_SEARCH = 1 << 20   # how far back from the text's end a slice end is looked for


@dataclass
class Trace:
    """What a trace file holds: its metadata keys, the kept events (`source_line` and the
    `EVENT_FIELDS`, typed, with `pid`/`tid` as read), the kernels' launch fields
    (`LAUNCH_FIELDS`), the counted operator calls (`OPERATOR_FIELDS`), repairs made while
    reading, and the error that stopped the read (events before it are kept)."""

    meta: dict = field(default_factory=dict)
    events: pl.DataFrame = field(default_factory=pl.DataFrame)
    launches: pl.DataFrame = field(default_factory=pl.DataFrame)
    operators: pl.DataFrame = field(default_factory=pl.DataFrame)
    warnings: list[LogWarning] = field(default_factory=list)
    error: ParseError | None = None


class _Collector:
    """The decoder's object hook and what it fills. The hook is called for every object of the
    file: an event is counted and, when kept, its fields appended (it returns None, so the
    decoder keeps no event); any other object (args, metadata) is returned as it is."""

    def __init__(self):
        self.columns = {name: [] for name in ("source_line", *EVENT_FIELDS)}
        self.launches: list[tuple] = []
        self.operators: list[tuple] = []
        self.frames: list[pl.DataFrame] = []
        self.launch_frames: list[pl.DataFrame] = []
        self.operator_frames: list[pl.DataFrame] = []
        self.hook, self.mark, self.rollback = self._hook()

    def _hook(self):
        (line_, kind_, name_, ts_, dur_, pid_, tid_, device_, context_, stream_, correlation_,
         bytes_) = (column.append for column in self.columns.values())
        launch_, operator_ = self.launches.append, self.operators.append
        count = itertools.count(1)
        categories, empty, launch_keys = CATEGORIES, _EMPTY, LAUNCH_FIELDS
        counted, op_flops = flops.NAMES, flops.op_flops
        lines = self.columns["source_line"]

        def keep(obj: dict):
            phase = obj.get("ph")
            if phase is None:
                return obj
            line = next(count)
            kind = categories.get(obj.get("cat"))
            if phase != "X" or kind is None:
                return None
            args = obj.get("args")
            if args.__class__ is not dict:
                args = empty
            name = obj.get("name")
            line_(line), kind_(kind), name_(name), ts_(obj.get("ts")), dur_(obj.get("dur"))
            pid_(obj.get("pid")), tid_(obj.get("tid")), device_(args.get("device"))
            context_(args.get("context")), stream_(args.get("stream"))
            correlation_(args.get("correlation")), bytes_(args.get("bytes"))
            if kind == "kernel":
                launch_((line, *map(args.get, launch_keys)))
            elif kind == "cpu_op" and name in counted:
                operator_((line, *op_flops(name, args)))
            return None

        def mark() -> tuple[int, int, int, int]:
            """Where the lists stand (and the next event's number)."""
            nonlocal count
            following = next(count)
            count = itertools.count(following)
            return len(lines), len(self.launches), len(self.operators), following

        def rollback(where: tuple[int, int, int, int]) -> None:
            """Forget what was appended since `mark()` gave `where`."""
            nonlocal count
            rows, launched, operated, following = where
            for column in self.columns.values():
                del column[rows:]
            del self.launches[launched:], self.operators[operated:]
            count = itertools.count(following)

        return keep, mark, rollback

    def flush(self, at_least: int = 1) -> None:
        """The gathered lists as typed frames, when they hold `at_least` events (or, with 1,
        whatever they hold)."""
        columns = self.columns
        if len(columns["source_line"]) < max(at_least, 1):
            return
        self.frames.append(pl.DataFrame(
            [pl.Series("source_line", columns["source_line"], dtype=pl.Int64)]
            + [pl.Series(name, columns[name], dtype=dtype, strict=False) for name, dtype in _TYPES.items()]
            + [_ids(columns[name], name) for name in ("pid", "tid")]))
        for column in columns.values():
            column.clear()
        if self.launches:
            self.launch_frames.append(_launch_frame(self.launches))
            self.launches.clear()
        if self.operators:
            names = ("source_line", *OPERATOR_FIELDS)
            self.operator_frames.append(pl.DataFrame(
                [pl.Series(name, values, dtype=dtype, strict=False) for name, values, dtype
                 in zip(names, zip(*self.operators), (pl.Int64, *_OPERATOR_TYPES.values()))]))
            self.operators.clear()

    def into(self, trace: Trace) -> None:
        self.flush()
        # One chunk per column, made while nothing else is held: polars would otherwise copy
        # the frame again in each operation that needs contiguous columns (sorts, joins).
        trace.events = pl.concat(self.frames, how="vertical_relaxed", rechunk=False).rechunk() if self.frames \
            else pl.DataFrame()
        self.frames.clear()
        trace.launches = (pl.concat(self.launch_frames, how="diagonal_relaxed", rechunk=False) if self.launch_frames
                          else pl.DataFrame(schema={"source_line": pl.Int64}))
        trace.operators = (pl.concat(self.operator_frames, rechunk=False) if self.operator_frames
                           else pl.DataFrame(schema={"source_line": pl.Int64, **_OPERATOR_TYPES}))


_NO_DIMS = (None, None, None)
# Kineto's launch fields after grid and block -> (metric as Kineto names it, unit) in `metrics`.
LAUNCH_METRICS = {"registers per thread": "register", "shared memory": "byte",
                  "blocks per SM": None, "warps per SM": None, "est. achieved occupancy %": "%"}
# What PyTorch (2.x) writes on a collective's kernel (NCCL, RCCL), from its `record_param_comms`
# call: the message in elements (`Out msg nelems` is all_gather's whole array), the process
# group's size; then, as words, the collective and the element type (c10's `Float`, `BFloat16`).
COLLECTIVE_METRICS = {"In msg nelems": "element", "Out msg nelems": "element", "Group size": "rank"}
COLLECTIVE_WORDS = ("Collective name", "dtype")


def _launch_frame(launches: list[tuple]) -> pl.DataFrame:
    """One row per kernel event: `source_line`, grid and block as `grid_x` ... `block_z`
    (null unless three numbers), the `LAUNCH_METRICS` and `COLLECTIVE_METRICS` values and the
    `COLLECTIVE_WORDS`; a field no event of the
    batch has is left out (a trace of millions of kernels without them holds no column of
    nulls: the tables add them)."""
    lines, grids, blocks, *values = zip(*launches)
    series = [pl.Series("source_line", lines, dtype=pl.Int64)]
    for prefix, shapes in (("grid", grids), ("block", blocks)):
        if any(shapes):
            axes = zip(*(v if v.__class__ is list and len(v) == 3 else _NO_DIMS for v in shapes))
            series += [pl.Series(f"{prefix}_{axis}", column, dtype=pl.Int64, strict=False)
                       for axis, column in zip("xyz", axes)]
    numbers = (*LAUNCH_METRICS, *COLLECTIVE_METRICS)
    series += [pl.Series(name, column, dtype=pl.Float64, strict=False)
               for name, column in zip(numbers, values) if any(v is not None for v in column)]
    series += [pl.Series(name, [None if v is None else str(v) for v in column], dtype=pl.String)
               for name, column in zip(COLLECTIVE_WORDS, values[len(numbers):]) if any(v is not None for v in column)]
    return pl.DataFrame(series)


def _ids(values: list, name: str) -> pl.Series:
    """Process or thread ids: numbers, or text where a trace names them (`"stream 7"`)."""
    try:
        return pl.Series(name, values, dtype=pl.Int64)
    except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):
        return pl.Series(name, values, dtype=pl.String, strict=False)


def read_trace(path: Path, display: str) -> Trace:
    """The trace in `path`; never raises for bad content (see `Trace.error`)."""
    trace = Trace()
    source = TextSource(path, display)
    collector = _Collector()
    reader = _Reader(source, collector, display, trace.meta)
    with gc_paused():
        try:
            reader.document()
        except ParseError as exc:
            trace.error = exc if exc.path else ParseError(exc.message, path=display)
        except RecursionError:
            trace.error = ParseError("JSON nested too deeply to be a trace", path=display)
        collector.into(trace)
    trace.warnings += source.warnings
    return trace


def long_integer(text: str, start: int = 0) -> tuple[int, str] | None:
    """(offset, what is wrong) of the first integer of `text` from `start` that has more
    digits than Python converts (`sys.get_int_max_str_digits`, 4,300 by default: the JSON
    decoder raises a ValueError without a position for it), or None."""
    limit = sys.get_int_max_str_digits()
    found = re.compile(r"\d{%d,}" % (limit + 1)).search(text, start) if limit else None
    if found is None:
        return None
    return found.start(), f"a number of {found.end() - found.start():,} digits, more than the {limit:,} a value may have"


@contextmanager
def gc_paused():
    """The cyclic GC paused: decoding makes a few hundred thousand containers (and the tables
    after it many lists), none of them garbage; a collection would walk them all."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Reader:
    """The JSON document over a stream of text pieces: `text` holds the unread part (and a
    little before it), `pos` where reading stands in it."""

    def __init__(self, source: TextSource, collector: _Collector, display: str, meta: dict):
        self.source, self.pieces = source, source.pieces()
        self.collector, self.display, self.meta = collector, display, meta
        self.scan = json.JSONDecoder(object_hook=collector.hook).scan_once
        self.text, self.pos, self.eof = "", 0, False

    # -- the text ------------------------------------------------------------------------

    def more(self) -> bool:
        """Append the next piece (dropping what was read); False at the end of the file."""
        if self.eof:
            return False
        piece = next(self.pieces, None)
        if piece is None:
            self.eof = True
            return False
        if self.pos:
            self.text, self.pos = self.text[self.pos:] + piece, 0
        else:
            self.text += piece
        return True

    def next_char(self) -> str | None:
        """The next character that is not blank (`pos` at it), None at the end."""
        while True:
            self.pos = _BLANK.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return None

    def value(self):
        """The JSON value at `pos` (blanks skipped), read more text until it is whole."""
        if self.next_char() is None:
            raise self._error(self.pos, "Expecting value")
        while True:
            try:
                value, end = self.scan(self.text, self.pos)
            except StopIteration as exc:
                if self._grow():
                    continue
                raise self._error(exc.value, "Expecting value") from None
            except json.JSONDecodeError as exc:
                if self._grow():
                    continue
                raise self._error(exc.pos, exc.msg) from None
            except ValueError as exc:   # an integer of more digits than Python converts
                raise self._long_number(exc) from None
            # (a number at the end of the text may go on in the next piece)
            if end >= len(self.text) and value.__class__ in (int, float) and self.more():
                continue
            self.pos = end
            return value

    def _grow(self) -> bool:
        if len(self.text) - self.pos > MAX_VALUE:
            raise self._error(self.pos, f"a value longer than {MAX_VALUE >> 20} MB, not an event")
        return self.more()

    def expect(self, wanted: str) -> str:
        found = self.next_char()
        if found is None or found not in wanted:
            expected = " or ".join(repr(c) for c in wanted)
            raise self._error(self.pos, f"Expecting {expected}")
        self.pos += 1
        return found

    # -- the document --------------------------------------------------------------------

    def document(self) -> None:
        first = self.next_char()
        if first == "[":
            raise self._not_kineto("an array")
        self.expect("{")
        found_events = False
        if self.next_char() == "}":
            self.pos += 1
        else:
            while True:
                key = self.value()
                self.expect(":")
                if key == "traceEvents" and self.next_char() == "[":
                    self.pos += 1
                    self.events()
                    found_events = True
                else:
                    self.meta[key] = self.value()
                if self.expect(",}") == "}":
                    break
        if self.next_char() is not None:
            raise self._error(self.pos, "Extra data")
        if not found_events:
            raise self._not_kineto("an object without traceEvents")

    def events(self) -> None:
        """The events of `traceEvents`, `pos` just after its `[`: many at a time."""
        if self.next_char() == "]":
            self.pos += 1
            return
        collector = self.collector
        while True:
            while not self.eof and len(self.text) - self.pos < PIECE:
                self.more()
            boundary = self._last_boundary()
            if boundary is not None:
                end, following = boundary
                where = collector.mark()
                try:
                    json.loads("[" + self.text[self.pos:end + 1] + "]", object_hook=collector.hook)
                    self.pos = following
                    collector.flush(FLUSH_ROWS)
                    continue
                except (ValueError, RecursionError):   # (JSONDecodeError, or a number too long)
                    collector.rollback(where)   # then one by one: the error, if real, has a place
                while self.pos < following:
                    if self._one_event():
                        return
                continue
            if self._one_event():
                return

    def _one_event(self) -> bool:
        """One event and what follows it; True after the last."""
        self.value()
        if self.expect(",]") == "]":
            return True
        self.next_char()
        return False

    def _last_boundary(self) -> tuple[int, int] | None:
        """The last `}` , `{` between two events in the text ahead: (offset of the `}`, of the
        `{`), or None."""
        text, low = self.text, max(self.pos, len(self.text) - _BOUNDARY_SEARCH)
        high = len(text)
        for _ in range(64):
            brace = text.rfind("}", low, high)
            if brace < 0:
                return None
            found = _BOUNDARY.match(text, brace)
            if found:
                return brace, found.end() - 1
            high = brace
        return None

    # -- errors --------------------------------------------------------------------------

    def _error(self, pos: int, message: str) -> ParseError:
        text = self.text
        line = self.source.line_at(self.source.chars - len(text) + pos)
        line_start = text.rfind("\n", 0, pos) + 1
        line_end = text.find("\n", pos)
        shown = text[line_start:line_end if line_end >= 0 else len(text)]
        cut = self.eof and (pos >= len(text.rstrip()) or message.startswith("Unterminated string"))
        where = "the trace ends early (the file was cut?)" if cut else f"bad JSON ({message})"
        read = len(self.collector.columns["source_line"]) + sum(f.height for f in self.collector.frames)
        return ParseError(f"{where}; {read} events before it were read", path=self.display, line=line,
                          column=pos - line_start + 1, text=shown[:10_000])

    def _long_number(self, exc: ValueError) -> ParseError:
        """The error for the value at `pos` that holds an integer longer than Python reads;
        `exc` itself when it is another fault."""
        found = long_integer(self.text, self.pos)
        if found is None:
            raise exc
        return self._error(*found)

    def _not_kineto(self, what: str) -> ParseError:
        return ParseError(f"not a Kineto trace: the JSON document is {what}", path=self.display,
                          line=1, column=1)
