"""rocprof (v1)'s Chrome-trace JSON (`results.json`, `--hip-trace` / `--sys-trace` /
`--timestamp on`) -> the shared tables.

rocprofiler's `tblextr.py` writes `{ "traceEvents":[{}` (an empty first event), a `process_name`
record per lane, then one `X` event per record, and the rocminfo capture flattened into
`otherData` (`"Agent9.MarketingName": "AMDInstinctMI210"`, spaces removed). A lane is a
process, named by what it holds:

* `GPU<n>` (one per HSA node, empty for the CPU nodes): a kernel dispatch per event, whose
  `args` repeat every `results.csv` column as strings (`KernelName`, `gpu-id`, `grd`,
  `BeginNs`...; counters too when collected): read through the CSV's vocabulary into `kernels`,
  `activities` and `metrics` (`tables.dispatches`), as `results.csv` is;
* `GPU Barriers<n>`: barrier/marker packets, waits and not kernels: `activities` of kind
  "barrier", out of kernel time;
* `COPY`: copies and fills (`CopyHostToDevice`, `FillBuffer`): `activities` of kind "memcpy" /
  "memset";
* `CPU HIP API`, `CPU HSA API`: one `api_calls` row (kind "trace") per call;
* `Markers and Ranges` (roctx, Kokkos tools): `regions` of kind "nvtx", AMD's NVTX.

`ts`/`dur` are microseconds (strings or numbers); the events' own `BeginNs`/`EndNs`/`DurationNs`
arguments, in ns, are used where given. Flow arrows (`ph` "s"/"t") are no rows. An `X` event
of a lane of no known kind is left out with a `rocm.unknown-lane` warning that counts them.
The GPU agents of `otherData` name the GPU (marketing name, LLVM target, compute units).
"""

from __future__ import annotations

import json
import re
from collections import Counter

import polars as pl

from roofreport.errors import ParseError
from roofreport.families.common.textio import Document
from roofreport.families.rocm import FAMILY, tables
from roofreport.families.rocm.header import RocmHeader
from roofreport.families.spec import ParseResult

# Lane (process) names tblextr.py writes, by what their events are.
_KERNEL_LANE = re.compile(r"^GPU\s*(\d+)$")
_BARRIER_LANE = re.compile(r"^GPU Barriers\s*(\d+)$")
_API_LANES = ("CPU HIP API", "CPU HSA API")
_RANGE_LANE = "Markers and Ranges"
_COPY_LANE = "COPY"
_FILL = re.compile(r"(?i)fill|memset")
_AGENT_KEY = re.compile(r"^Agent(\d+)\.(Name|MarketingName|DeviceType|ComputeUnit|Node)$")
NS_PER_US = 1000.0
# otherData's keys and values lose rocminfo's spaces (`AMDInstinctMI210`): put them back where a
# word starts (after `AMD`, before a capital that follows a small letter), as the GPU table spells it.
_WORD_START = re.compile(r"(?<=^AMD)(?=[A-Z])|(?<=[a-z])(?=[A-Z])")


def parse(doc: Document, variant: str) -> ParseResult:
    result = ParseResult(family=FAMILY, variant=variant)
    try:
        document = json.loads(doc.data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        result.error = ParseError(f"not a whole JSON document ({exc.args[0].split(':')[0]}): nothing read",
                                  path=doc.display, line=line, column=column)
        return result
    events = document.get("traceEvents") if isinstance(document, dict) else None
    if not isinstance(events, list):
        result.error = ParseError("no traceEvents list: not a rocprof trace", path=doc.display)
        return result
    lanes = _lanes(events)
    by_kind: dict[str, list[tuple[int, dict]]] = {}
    unknown: Counter[str] = Counter()
    for position, event in enumerate(events, start=1):
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        lane = lanes.get(str(event.get("pid")), "")
        kind = _lane_kind(lane)
        if kind is None:
            unknown[lane or f"pid {event.get('pid')}"] += 1
            continue
        by_kind.setdefault(kind, []).append((position, event))
    for lane, count in unknown.items():
        result.warn("rocm.unknown-lane", f"{doc.display}: {count} events of lane {lane!r}, of no known kind: left out")
    if "kernel" in by_kind:
        _kernels(by_kind["kernel"], result)
    if "barrier" in by_kind or "copy" in by_kind:
        _activities(by_kind.get("copy", []) + by_kind.get("barrier", []), lanes, result)
    if "api" in by_kind:
        _api_calls(by_kind["api"], result)
    if "range" in by_kind:
        _ranges(by_kind["range"], result)
    other = document.get("otherData")
    if isinstance(other, dict):
        _agent_hints(other, by_kind.get("kernel", []), result)
    tables.barriers_apart(result)   # (a barrier packet in a kernel lane, as results.csv lists them)
    if not result.rows():
        result.error = ParseError("the trace holds no kernels, copies, API calls or ranges", path=doc.display)
    return result


def _lanes(events: list) -> dict[str, str]:
    """pid (as text: tblextr.py writes it as a number or a string) -> the lane's name."""
    return {str(e.get("pid")): str((e.get("args") or {}).get("name", ""))
            for e in events if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"}


def _lane_kind(lane: str) -> str | None:
    if _BARRIER_LANE.match(lane):
        return "barrier"
    if _KERNEL_LANE.match(lane):
        return "kernel"
    if lane == _COPY_LANE:
        return "copy"
    if lane in _API_LANES:
        return "api"
    if lane == _RANGE_LANE:
        return "range"
    return None


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _times(event: dict) -> tuple[float | None, float | None]:
    """(start, duration) in ns: the event's `BeginNs`/`EndNs`/`DurationNs` arguments, else its
    `ts`/`dur` in microseconds."""
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    begin, end = _number(args.get("BeginNs")), _number(args.get("EndNs"))
    duration = _number(args.get("DurationNs"))
    if duration is None and begin is not None and end is not None:
        duration = end - begin
    if begin is None and (ts := _number(event.get("ts"))) is not None:
        begin = ts * NS_PER_US
    if duration is None and (dur := _number(event.get("dur"))) is not None:
        duration = dur * NS_PER_US
    return begin, duration


def _kernels(events: list[tuple[int, dict]], result: ParseResult) -> None:
    """The GPU lanes' events as the rows of a `results.csv`: their `args` are its columns."""
    rows = []
    for position, event in events:
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        row = {str(key): None if value is None else str(value) for key, value in args.items()}
        row.setdefault("KernelName", str(event.get("name", "")))
        begin, duration = _times(event)
        if "BeginNs" not in row and begin is not None:
            row["BeginNs"] = repr(begin)
        if "DurationNs" not in row and "EndNs" not in row and duration is not None:
            row["DurationNs"] = repr(duration)
        rows.append((position, row))
    names = list(dict.fromkeys(key for _, row in rows for key in row))
    if "gpu-id" not in names:
        names.append("gpu-id")   # the lane's node: `GPU8` is gpu-id 8
        rows = [(position, {**row, "gpu-id": _gpu_of(event)}) for (position, row), (_, event) in zip(rows, events)]
    cells = pl.DataFrame({"source_line": [position for position, _ in rows],
                          **{f"c{index}": [row.get(name) for _, row in rows] for index, name in enumerate(names)}},
                         schema={"source_line": pl.Int64, **{f"c{index}": pl.String for index in range(len(names))}})
    header = RocmHeader(line_no=1, names=tuple(names), kind="table", report="dispatches", tool="rocprof",
                        file_report="results")
    tables.dispatches(cells, header, result)


def _gpu_of(event: dict) -> str | None:
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    return str(args["gpu-id"]) if "gpu-id" in args else None


def _activities(events: list[tuple[int, dict]], lanes: dict[str, str], result: ParseResult) -> None:
    rows = []
    for position, event in sorted(events, key=lambda pair: pair[0]):
        begin, duration = _times(event)
        name = str(event.get("name", ""))
        lane = lanes.get(str(event.get("pid")), "")
        barrier = _BARRIER_LANE.match(lane)
        kind = "barrier" if barrier else "memset" if _FILL.search(name) else "memcpy"
        rows.append({"source_line": position, "kind": kind, "name": name, "start_ns": begin, "duration_ns": duration,
                     "device": barrier.group(1) if barrier else None})
    result.add("activities", pl.DataFrame(rows, schema={"source_line": pl.Int64, "kind": pl.String, "name": pl.String,
                                                        "start_ns": pl.Float64, "duration_ns": pl.Float64,
                                                        "device": pl.String}))


def _api_calls(events: list[tuple[int, dict]], result: ParseResult) -> None:
    rows = []
    for position, event in events:
        begin, duration = _times(event)
        rows.append({"source_line": position, "kind": "trace", "name": str(event.get("name", "")), "calls": 1,
                     "total_ns": duration, "start_ns": begin})
    result.add("api_calls", pl.DataFrame(rows, schema={"source_line": pl.Int64, "kind": pl.String, "name": pl.String,
                                                       "calls": pl.Int64, "total_ns": pl.Float64,
                                                       "start_ns": pl.Float64}))


def _ranges(events: list[tuple[int, dict]], result: ParseResult) -> None:
    rows = []
    for position, event in events:
        begin, duration = _times(event)
        name = str(event.get("name", ""))
        rows.append({"source_line": position, "kind": "nvtx", "name": name, "path": name, "start_ns": begin,
                     "duration_ns": duration, "count": 1})
    result.add("regions", pl.DataFrame(rows, schema={"source_line": pl.Int64, "kind": pl.String, "name": pl.String,
                                                     "path": pl.String, "start_ns": pl.Float64,
                                                     "duration_ns": pl.Float64, "count": pl.Int64}))


def _agent_hints(other: dict, kernels: list[tuple[int, dict]], result: ParseResult) -> None:
    """The GPU that ran the kernels (its HSA node is their `gpu-id`), else the first GPU agent:
    its marketing name, LLVM target and compute units."""
    agents: dict[int, dict[str, str]] = {}
    for key, value in other.items():
        found = _AGENT_KEY.match(str(key))
        if found:
            agents.setdefault(int(found.group(1)), {})[found.group(2)] = str(value).strip()
    gpus = [agent for _, agent in sorted(agents.items()) if agent.get("DeviceType") == "GPU"]
    if not gpus:
        return
    nodes = Counter(_gpu_of(event) for _, event in kernels)
    busiest = nodes.most_common(1)[0][0] if nodes else None
    agent = next((gpu for gpu in gpus if gpu.get("Node") == busiest), gpus[0])
    hints = result.hints
    hints.device_name = spaced(agent.get("MarketingName") or "") or agent.get("Name")
    target = agent.get("Name", "")
    hints.compute_capability = target.split(":")[0] if target.lower().startswith("gfx") else None
    units = _number(agent.get("ComputeUnit"))
    hints.sm_count = int(units) if units else None


def spaced(name: str) -> str:
    """`AMDInstinctMI210` -> `AMD Instinct MI210` (a name with its spaces kept stays as it is)."""
    return name if " " in name else _WORD_START.sub(" ", name)
