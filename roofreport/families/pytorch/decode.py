"""Reading a PyTorch profiler (Kineto) trace file into its events: the JSON layer only.

A Kineto trace is one JSON object (Chrome trace format): metadata keys (`schemaVersion`,
`deviceProperties`, `distributedInfo`, `traceName`, ...) and `traceEvents`, a list of event
objects (`ph`, `cat`, `name`, `pid`, `tid`, `ts` and `dur` in microseconds, `args`). Files are
plain (`.json`, `*.pt.trace.json`) or gzip (`.json.gz`), told by their first bytes.

The standard library's decoder reads it, with an object hook that appends the fields of each
complete event (`ph` "X") of a category roofreport uses to one list per field
(`EVENT_FIELDS`) as soon as it is decoded, and drops every event (flows, instants, metadata,
categories nobody reads). The event dicts are freed at once instead of living until the end of
the decode: a 54 MB trace peaks at about half the memory of a plain `json.load`, and decodes
faster too (fewer live objects for the allocator and the cyclic GC, which is paused
meanwhile), and no list of tuples has to be turned into columns afterwards. The hook counts
the events as the decoder meets them, in file order: an event's position in `traceEvents` is
its `source_line` (JSON has no line per record; HTA's re-written traces are one line).

A file that is cut or damaged keeps every event decoded before the damage (the hook saw each
complete one), its metadata keys are read where they can be, and the error names the line and
column (`Trace.error`).
"""

from __future__ import annotations

import gc
import itertools
import json
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from roofreport.errors import LogWarning, ParseError
from roofreport.families.common.textio import repair

GZIP_MAGIC = b"\x1f\x8b"
# A gzip bomb must not take the machine down: traces beyond this are refused.
MAX_TRACE_BYTES = 4 << 30

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
# The fields kept of each event, in this order (`args` fields are Kineto's own key names).
EVENT_FIELDS = ("kind", "name", "ts", "dur", "pid", "tid", "device", "context", "stream",
                "correlation", "bytes")
# What a kernel event adds (its `args`), one tuple per kernel in `Trace.launches`, after its
# source_line: the launch shape, then what CUPTI says of the launch, as Kineto names it.
LAUNCH_FIELDS = ("grid", "block", "registers per thread", "shared memory", "blocks per SM",
                 "warps per SM", "est. achieved occupancy %")
_EMPTY: dict = {}


@dataclass
class Trace:
    """What a trace file holds: its metadata keys, the kept events as one list per field
    (`source_line` and `EVENT_FIELDS`), the kernels' launch fields (`LAUNCH_FIELDS`), repairs
    made while reading, and the error that stopped the read (events before it are kept)."""

    meta: dict = field(default_factory=dict)
    columns: dict[str, list] = field(default_factory=dict)
    launches: list[tuple] = field(default_factory=list)
    warnings: list[LogWarning] = field(default_factory=list)
    error: ParseError | None = None


def _collector() -> tuple:
    """(the decoder's object hook, the columns it fills, the kernels' launch tuples). The hook
    is called for every object of the file: an event is counted and, when kept, its fields
    appended (it returns None, so the decoder keeps no event); any other object (args,
    metadata, the document) is returned as it is."""
    columns = {name: [] for name in ("source_line", *EVENT_FIELDS)}
    (line_, kind_, name_, ts_, dur_, pid_, tid_, device_, context_, stream_, correlation_,
     bytes_) = (column.append for column in columns.values())
    launches: list[tuple] = []
    launch_ = launches.append
    count = itertools.count(1)
    categories, empty, launch_keys = CATEGORIES, _EMPTY, LAUNCH_FIELDS

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
        line_(line), kind_(kind), name_(obj.get("name")), ts_(obj.get("ts")), dur_(obj.get("dur"))
        pid_(obj.get("pid")), tid_(obj.get("tid")), device_(args.get("device"))
        context_(args.get("context")), stream_(args.get("stream"))
        correlation_(args.get("correlation")), bytes_(args.get("bytes"))
        if kind == "kernel":
            launch_((line, *map(args.get, launch_keys)))
        return None

    return keep, columns, launches


def read_trace(path: Path, display: str) -> Trace:
    """The trace in `path`; never raises for bad content (see `Trace.error`)."""
    trace = Trace()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        trace.error = ParseError(f"cannot read: {exc.strerror or exc}", path=display)
        return trace
    if raw.startswith(GZIP_MAGIC):
        try:
            raw, cut = _gunzip(raw)
        except ParseError as exc:
            trace.error = ParseError(exc.message, path=display)
            return trace
        if cut:
            trace.warnings.append(LogWarning("pytorch.truncated", f"the gzip stream {cut}: the "
                                             "trace is read up to where it stops"))
    text, repaired = _text(raw)
    del raw
    trace.warnings += repaired
    _decode(text, display, trace)
    return trace


def _gunzip(data: bytes) -> tuple[bytes, str | None]:
    """The decompressed bytes, and how the stream was damaged (None when whole)."""
    inflater = zlib.decompressobj(wbits=47)   # gzip or zlib header, told from the stream
    try:
        out = inflater.decompress(data, MAX_TRACE_BYTES)
    except zlib.error as exc:
        # Everything inflated before the damage is lost by zlib's one-shot call: inflate again
        # in small pieces to keep it.
        return _gunzip_pieces(data), f"is damaged ({exc})"
    if inflater.unconsumed_tail:
        raise ParseError(f"the trace inflates to more than {MAX_TRACE_BYTES >> 30} GiB; not read")
    return out, None if inflater.eof else "ends early (the file was cut)"


def _gunzip_pieces(data: bytes, piece: int = 1 << 16) -> bytes:
    """What inflates before the damage (up to the size cap)."""
    inflater, out, size = zlib.decompressobj(wbits=47), [], 0
    for start in range(0, len(data), piece):
        try:
            out.append(inflater.decompress(data[start:start + piece], MAX_TRACE_BYTES - size))
        except zlib.error:
            break
        size += len(out[-1])
        if size >= MAX_TRACE_BYTES:
            break
    return b"".join(out)


def _text(raw: bytes) -> tuple[str, list[LogWarning]]:
    """The JSON text: UTF-8 (UTF-16/32 told by json's own rule); damage repaired as for logs."""
    encoding = json.detect_encoding(raw)
    if encoding != "utf-8":
        return raw.decode(encoding, errors="replace"), []
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if b"\0" not in raw:
        try:
            return raw.decode("utf-8"), []
        except UnicodeDecodeError:
            pass
    data, warnings = repair(raw)
    return data.decode("utf-8", errors="replace"), warnings


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


def _decode(text: str, display: str, trace: Trace) -> None:
    keep, columns, launches = _collector()
    trace.launches = launches   # (every kernel decoded, before any damage too)
    with gc_paused():
        try:
            document = json.loads(text, object_hook=keep)
        except json.JSONDecodeError as exc:
            trace.columns = columns   # every event decoded before the damage
            _damaged(text, display, trace, exc)
            return
        except RecursionError:
            trace.error = ParseError("JSON nested too deeply to be a trace", path=display)
            return
    if not isinstance(document, dict) or not isinstance(document.get("traceEvents"), list):
        what = "an array" if isinstance(document, list) else "an object without traceEvents"
        trace.error = ParseError(f"not a Kineto trace: the JSON document is {what}", path=display,
                                 line=1, column=1)
        return
    del document["traceEvents"]
    trace.meta, trace.columns = document, columns


# -- damaged files ---------------------------------------------------------------------------

def _damaged(text: str, display: str, trace: Trace, exc: json.JSONDecodeError) -> None:
    """The error at the damage, and the metadata keys read where they can be."""
    trace.meta = _meta_keys(text, json.JSONDecoder(), _events_start(text))
    line_start = text.rfind("\n", 0, exc.pos) + 1
    line_end = text.find("\n", exc.pos)
    shown = text[line_start:line_end if line_end >= 0 else len(text)]
    cut = exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
    where = "the trace ends early (the file was cut?)" if cut else f"bad JSON ({exc.msg})"
    trace.error = ParseError(f"{where}; {len(trace.columns['source_line'])} events before it were "
                             "read", path=display, line=exc.lineno, column=exc.colno,
                             text=shown[:10_000])


def _events_start(text: str) -> int | None:
    """Offset just after the `[` that opens `traceEvents` (None when not found)."""
    key = text.find('"traceEvents"')
    if key < 0:
        return None
    bracket = text.find("[", key)
    colon = text.find(":", key)
    if bracket < 0 or colon < 0 or text[colon + 1:bracket].strip():
        return None
    return bracket + 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


_META_KEYS = ("schemaVersion", "deviceProperties", "distributedInfo", "traceName")


def _meta_keys(text: str, decoder: json.JSONDecoder, events_start: int | None) -> dict:
    """The metadata keys written before `traceEvents` (Kineto writes them first)."""
    head = text[:events_start] if events_start is not None else text[:1 << 20]
    meta = {}
    for key in _META_KEYS:
        at = head.find(f'"{key}"')
        colon = head.find(":", at) if at >= 0 else -1
        if colon < 0:
            continue
        try:
            meta[key], _ = decoder.raw_decode(text, _skip(text, colon + 1))
        except json.JSONDecodeError:
            continue
    return meta
