"""What the pipeline keeps of one file once it was read, apart from its rows.

`FileFacts` is everything run grouping (`runs.py`, `duplicates.py`), the runs' GPUs (`gpu`:
the evidence its rows give, `gpu/resolve.py`) and the file's outcome (`dataset.FileOutcome`)
need: what sniffing found, what the reader said about the run, its warnings and error, how many
rows each table got, and fingerprints of its bytes and rows. An incremental dataset (`store.py`)
keeps the facts of every file as JSON, so an update groups runs over all files again without
reading the unchanged ones.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from roofreport.errors import LogWarning
from roofreport.families.spec import RunHints, Session
from roofreport.gpu import Evidence
from roofreport.pipeline.jobscripts import JobRequest

# status of a file that was read without error / with an error after some rows / before any
OK, PARTIAL, ERROR, SKIPPED = "ok", "partial", "error", "skipped"


@dataclass
class FileFacts:
    """One file's facts (see the module docstring). `parsed`: a reader ran to its end (with or
    without error) and its rows, if any, are part of the tables."""

    display: str                     # the path as the tables and messages show it (`source_file`)
    size: int = 0
    encoding: str | None = None
    family: str | None = None
    variant: str | None = None
    skip_reason: str | None = None   # why it was not read (not a log, excluded, empty...)
    excluded: bool = False
    parsed: bool = False
    tool_version: str | None = None
    hints: RunHints = field(default_factory=RunHints)
    sessions: list[Session] = field(default_factory=list)
    warnings: list[LogWarning] = field(default_factory=list)
    error: str | None = None
    rows: dict[str, int] = field(default_factory=dict)
    content_hash: str | None = None  # blake2b of the bytes (`duplicates.file_digest`)
    tables_digest: str | None = None  # hash of the rows but where they were read (`duplicates`)
    limits: dict | None = None        # the limits it was read under (`Limits.as_dict`): an update
                                      # reads it again under others
    gpu: Evidence = field(default_factory=Evidence)  # what its rows say of the GPU (`enrich.gpu_evidence`)
    job: JobRequest | None = None    # a job script's request (`jobscripts.py`): its runs' metadata
    failure: str | None = None        # a profiler log without kernels: why, as a code (`failures.py`)
    command_line: str | None = None   # the ncu invocation the log echoed (`$ ncu --clock-control none ...`)
    failure_reason: str | None = None  # ... in words, with the log's line and where it is
    progress: dict | None = None      # the program's own progress lines (`progress.Progress.as_dict`)
    _json: str | None = field(default=None, repr=False, compare=False)  # the text read from

    @property
    def status(self) -> str:
        if not self.parsed:
            return ERROR if self.error else SKIPPED
        if self.error is None:
            return OK
        return PARTIAL if self.rows else ERROR

    @property
    def shape(self) -> tuple:
        """(table, rows) of every table with rows, sorted: what the duplicate check compares."""
        return tuple(sorted(self.rows.items()))

    def to_json(self) -> str:
        """The facts as JSON (facts read from JSON give back that text: kept unchanged)."""
        if self._json is not None:
            return self._json
        data = asdict(self)
        del data["_json"]
        data["warnings"] = [{"code": w.code, "message": w.message, "line": w.line} for w in self.warnings]
        return json.dumps(data, separators=(",", ":"))

    def compact(self) -> FileFacts:
        """The same facts in less memory, as a campaign's parse keeps tens of thousands of
        them until its runs are grouped: rebuilt from their JSON (the text not kept), as an
        update reads them back. Facts that came through a worker's pickle take ~4.5 KB each
        in memory, rebuilt ~2.3 KB (the limits, the same for every file, shared)."""
        facts = FileFacts.from_json(self.to_json())
        facts._json = None
        return facts

    @classmethod
    def from_json(cls, text: str) -> FileFacts:
        data = json.loads(text)
        if data.get("limits") is not None:
            data["limits"] = _shared(data["limits"])
        data["hints"] = RunHints(**data["hints"])
        data["sessions"] = [Session(first_line=s["first_line"], hints=RunHints(**s["hints"]))
                            for s in data["sessions"]]
        data["warnings"] = [LogWarning(w["code"], w["message"], w["line"], path=data["display"])
                            for w in data["warnings"]]
        data["gpu"] = Evidence.from_dict(data.get("gpu"))
        data["job"] = JobRequest.from_dict(data.get("job"))
        facts = cls(**data)
        facts._json = text
        return facts


_LIMITS: dict[str, dict] = {}


def _shared(limits: dict) -> dict:
    """One dict for every file read under the same limits (never changed in place)."""
    key = json.dumps(limits, sort_keys=True)
    if len(_LIMITS) > 64:   # (a few settings per read; never grows with the campaign)
        _LIMITS.clear()
    return _LIMITS.setdefault(key, limits)
