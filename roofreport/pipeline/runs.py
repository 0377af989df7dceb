"""Runs as their authors ran them: which logs (or profiler sessions) form each run, and what the
run was.

A run is one execution of one program with one configuration (DESIGN.md §2). The rules:

* each profiler session of a concatenated log is a run of its own (the readers give the line
  each session starts at, and its command and device: `ParseResult.sessions`);
* a copy of another log (`duplicates.py`) is a run of its own, marked `duplicate_of` the run it
  copies, so the report can leave it out of the body;
* files a `roofreport.toml` `[[run]]` table names (`name = ...`) form that run;
* otherwise the logs of one directory whose names say the same thing form one run: names that
  differ by a variant token (`..._draft_4bit_L4`, `..._draft_8bit_L4`, two Slurm job ids) stay
  apart, and a name that says nothing of its own (`tmp_nsys_gputrace.csv`) joins the one run its
  directory holds. Two logs of the same kind, or logs whose content names different commands or
  GPUs, are never one run;
* each rank of a distributed job (a trace per rank) stays a run of its own, with its `rank` and
  `world_size`; the ranks of one job share `distributed_job` (`_distributed_jobs`): the runs of
  one folder whose rank comes from the log (Kineto's `distributedInfo`) or the name (`rank-N`,
  `rank_N`: nsys `-o report_rank%q{OMPI_COMM_WORLD_RANK}`, rocprof `results_rank0.csv`, any
  family), of the same family and world size, whose names are the same but for the rank.
  Step numbers alone never group (unrelated runs share them), nor do names that differ by a
  process id alone (`report.%p`: two runs of one program, one after the other, are named so too),
  but for rocprof's per-process files (`<pid>_kernel_trace.csv`) and nsys's per-process
  reports (`report.%q{OMPI_COMM_WORLD_RANK}`, `report.%p`) whose GPU work overlapped in time
  (`_process_jobs`): ranks in the order of their numbers;
* one trace that several processes wrote (an nsys report or a rocprof trace that followed a
  launcher's children, `families/common/processes.py`) is one run and one job: its rows carry
  each process's `rank`, the run `ranks` and `world_size` (the processes it holds) and
  `distributed_job`, and no `rank` of its own.

Each field of a run's identity comes from, in this order: the `roofreport.toml`, what the log
says about itself (the profiled command line, process and device), the path, and last the
configuration name a job echoed at the top of its log. The `provenance` column records which.
The GPU is the resolver's answer (`gpu/resolve.py`) to everything the run's files, paths,
folder and user say of it (`gpu.Evidence`): the `gpu*` columns hold it, and the label shows it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import PurePosixPath
from typing import NamedTuple

import polars as pl

from roofreport import gpu
from roofreport.families.rocm import passes
from roofreport.families.spec import RunHints, Session
from roofreport.pipeline import identity, jobscripts, labels
from roofreport.pipeline.config import RunTable
from roofreport.tables import schema

# The sources of a run's identity, strongest first. "folder" is the experiment a folder name
# gives (`C3/`, `proj1/`) when the file's own name and the log give none.
SOURCES = ("toml", "log", "path", "label", "folder")


@dataclass
class LogFile:
    """One parsed file, as run planning sees it."""

    index: int
    rel: PurePosixPath             # path below its input root
    root: str                      # the input root's name
    family: str
    variant: str
    tool_version: str | None = None
    hints: RunHints = field(default_factory=RunHints)
    sessions: list[Session] = field(default_factory=list)
    tables: list[RunTable] = field(default_factory=list)
    duplicate_of: int | None = None
    gpu: gpu.Evidence = field(default_factory=gpu.Evidence)   # what its rows say of the GPU


@dataclass
class Plan:
    """Which run each file's rows belong to, and the runs table."""

    runs: pl.DataFrame
    file_run: dict[int, str]                                   # file -> its run
    session_runs: dict[int, list[tuple[int, str]]]             # file -> (first line, run) per session
    gpus: dict[str, gpu.GpuIdentity] = field(default_factory=dict)   # run -> its GPU

    def gpu_of(self, index: int) -> gpu.GpuIdentity | None:
        """The GPU of a file's run (of its first session's, for a log of several)."""
        sessions = self.session_runs.get(index)
        run = sessions[0][1] if sessions else self.file_run.get(index)
        return self.gpus.get(run) if run else None

    def label_of(self, index: int) -> str:
        """The run(s) of a file as `files.run` shows them."""
        if index in self.session_runs:
            return ", ".join(run for _, run in self.session_runs[index])
        return self.file_run.get(index, "")


@dataclass
class _Unit:
    """A file, or one session of a concatenated log: what a run is made of."""

    file: LogFile
    session: int | None
    hints: RunHints

    @property
    def rel_dir(self) -> PurePosixPath:
        return _log_dir(self.file)


def plan(files: list[LogFile], settings: gpu.GpuSettings = gpu.NO_SETTINGS,
         scripts: list[jobscripts.Script] | None = None) -> Plan:
    """The runs of `files` (module docstring); `settings`: what the user says of the GPU;
    `scripts`: the job scripts among the inputs (`jobscripts.py`: the GPUs their jobs asked for)."""
    db = settings.database()
    units = {f.index: _units(f) for f in files}
    groups = _groups(files, units, db)
    ids = _run_ids(groups, files)
    named = _named_in_folders(groups, db)
    indexed = jobscripts.Scripts(scripts or [])
    rows, gpus = [], {}
    for run_id, members in zip(ids, groups):
        facts = [_unit_facts(unit) for unit in members]
        row, gpus[run_id] = _identity(run_id, members, facts, _evidence(members, facts, settings, named), db)
        row.update(_job_request(members, gpus[run_id], indexed, db))
        rows.append(row)
    _link_duplicates(rows, groups, ids)
    _distributed_jobs(rows, groups)
    labels.assign(rows)
    file_run, session_runs = {}, {}
    for run_id, members in zip(ids, groups):
        for unit in members:
            if unit.session is None:
                file_run[unit.file.index] = run_id
            else:
                first = unit.file.sessions[unit.session - 1].first_line
                session_runs.setdefault(unit.file.index, []).append((first, run_id))
    return Plan(runs=_table(rows), file_run=file_run, session_runs=session_runs, gpus=gpus)


# -- units and groups --------------------------------------------------------------------------

def _units(file: LogFile) -> list[_Unit]:
    if len(file.sessions) < 2:
        hints = _merged(file.sessions[0].hints, file.hints) if file.sessions else file.hints
        return [_Unit(file, None, hints)]
    # A session that names no device ran where the file's other sessions did.
    own = RunHints(device_name=file.hints.device_name, host=file.hints.host)
    return [_Unit(file, n, _merged(s.hints, own)) for n, s in enumerate(file.sessions, 1)]


def _groups(files: list[LogFile], units: dict[int, list[_Unit]], db: gpu.GpuDatabase) -> list[list[_Unit]]:
    groups: list[list[_Unit]] = []
    named: dict[str, list[_Unit]] = {}
    by_dir: dict[tuple, list[_Unit]] = {}
    for file in files:
        for unit in units[file.index]:
            name = _toml_name(file)
            if file.duplicate_of is not None or unit.session is not None:
                groups.append([unit])
            elif name is not None:
                named.setdefault(name, []).append(unit)
            else:
                by_dir.setdefault((file.root, str(unit.rel_dir)), []).append(unit)
    groups += named.values()
    for members in by_dir.values():
        groups += _directory_runs(members, db)
    return groups


def _directory_runs(members: list[_Unit], db: gpu.GpuDatabase) -> list[list[_Unit]]:
    """The runs of one directory's logs: one per variant key; keyless logs join the only run."""
    dir_facts = _dir_facts(members[0].file.rel)
    by_key: dict[tuple, list[_Unit]] = {}
    for unit in members:
        by_key.setdefault(_variant_key(unit, dir_facts), []).append(unit)
    keyless = by_key.pop((), [])
    runs = list(by_key.values())
    if keyless:
        if len(runs) == 1 and _can_join(runs[0], keyless):
            runs[0] += keyless
        else:
            runs.append(keyless)
    out = []
    for run in runs:
        out += _split_unlike(run, db)
    return out


def _variant_key(unit: _Unit, dir_facts: dict) -> tuple:
    """What the file's name says that its directories do not."""
    name = identity.read_name(unit.file.rel.name)
    own = {k: v for k, v in name.facts.items() if dir_facts.get(k) != v}
    if not own:
        return ()
    return name.key


def _can_join(run: list[_Unit], keyless: list[_Unit]) -> bool:
    kinds = [_kind(u) for u in run + keyless]
    return len(kinds) == len(set(kinds))


def _split_unlike(run: list[_Unit], db: gpu.GpuDatabase) -> list[list[_Unit]]:
    """Logs of one name that cannot be one execution. Content that names different commands or
    GPUs: each log a run of its own. Two logs of the same kind (two dmon captures): as many runs
    as it takes to hold one log of each kind, the logs taken in order."""
    if len(run) < 2:
        return [run]
    commands = {u.hints.command.strip() for u in run if u.hints.command}
    gpus = [u.hints.device_name for u in run if u.hints.device_name]
    if len(commands) > 1 or any(not db.same_gpu(a, b) for a in gpus for b in gpus):
        return [[u] for u in run]
    out: list[list[_Unit]] = []
    for unit in run:
        home = next((group for group in out if _kind(unit) not in {_kind(u) for u in group}), None)
        if home is None:
            out.append([unit])
        else:
            home.append(unit)
    return out


def _kind(unit: _Unit) -> tuple[str, str, int | None]:
    """What a run holds one log of: a family's kind of log, and of a profiler's counter passes,
    one per pass (`passes.counter_pass`)."""
    found = passes.counter_pass(unit.file.rel)
    return unit.file.family, unit.file.variant, found[1] if found else None


def _log_dir(file: LogFile) -> PurePosixPath:
    """The folder a log's run is named by and grouped in: its own, or for one pass of a
    profiler's counter passes (rocprofv3 `pmc_N/<host>/`), the application's folder above them."""
    found = passes.counter_pass(file.rel)
    return found[0] if found else file.rel.parent


def _toml_name(file: LogFile) -> str | None:
    name = None
    for table in file.tables:
        name = table.name or name
    return name


# -- run ids -----------------------------------------------------------------------------------

def _run_ids(groups: list[list[_Unit]], files: list[LogFile]) -> list[str]:
    """Stable ids: a file's path (with `#N` for a session); a directory for the one run of its
    logs (unless it is one log whose name says more than the directory); the name a
    roofreport.toml gives. Prefixed with the input's name only where two inputs
    would give the same id."""
    logs_in: dict[tuple, int] = {}
    for file in files:
        if file.duplicate_of is None:
            logs_in[(file.root, _log_dir(file))] = logs_in.get((file.root, _log_dir(file)), 0) + 1
    ids = []
    for members in groups:
        first = members[0]
        file = first.file
        whole_dir = len({m.file.index for m in members}) == logs_in.get((file.root, _log_dir(file)))
        says_nothing_more = len(members) > 1 or not _variant_key(first, _dir_facts(file.rel))
        if first.session is not None:
            ids.append(f"{file.rel}#{first.session}")
        elif file.duplicate_of is None and _toml_name(file) is not None:
            ids.append(_toml_name(file))
        elif whole_dir and says_nothing_more and str(_log_dir(file)) != ".":
            ids.append(str(_log_dir(file)))
        else:
            ids.append(_common_name(members))
    return _prefixed_where_clashing(ids, [g[0].file.root for g in groups])


def _common_name(members: list[_Unit]) -> str:
    """A run of one file: its path. Of several: their folder and the start of the name they
    share (`ncu/julia_profile` for `ncu/julia_profile.details.csv` and `.raw.csv`), else the
    first path."""
    paths = sorted({m.file.rel for m in members})
    if len(paths) == 1:
        return str(paths[0])
    shared = os.path.commonprefix([p.name for p in paths]).rstrip("._- ")
    if len(shared) < 3:
        return str(paths[0])
    return str(paths[0].parent / shared)


def _prefixed_where_clashing(ids: list[str], roots: list[str]) -> list[str]:
    owners: dict[str, set[str]] = {}
    for run_id, root in zip(ids, roots):
        owners.setdefault(run_id, set()).add(root)
    return [f"{root}/{run_id}" if len(owners[run_id]) > 1 else run_id for run_id, root in zip(ids, roots)]


# -- identity ----------------------------------------------------------------------------------

def _identity(run_id: str, members: list[_Unit], unit_facts: list[dict[str, dict]], evidence: gpu.Evidence,
              db: gpu.GpuDatabase) -> tuple[dict, gpu.GpuIdentity]:
    """The run's row: every field from the strongest source that has it, and which one that
    was (`unit_facts`: what each source says of each unit); the GPU from the resolver."""
    layers = {source: {} for source in SOURCES}
    for said in unit_facts:
        for source, facts in said.items():
            for key, value in facts.items():
                if value is not None:
                    layers[source].setdefault(key, value)
    values, provenance = {}, {}
    for source in SOURCES:
        for key, value in layers[source].items():
            if key not in values:
                values[key], provenance[key] = value, source
    first = members[0]
    row = {
        "run": run_id,
        "model": values.pop("model", None),
        "experiment": _text(values.pop("experiment", None)),
        "program": values.pop("program", None),
        "job": _text(values.pop("job", None)),
        "session": first.session,
        "command": values.pop("command", None),
        "host": values.pop("host", None),
        "source_dir": str(first.rel_dir) if str(first.rel_dir) != "." else ".",
        "files": len({u.file.index for u in members}),
        "tool": "+".join(sorted({u.file.family for u in members})),
        "tool_version": next((u.file.tool_version for u in members if u.file.tool_version), None),
        "device_kind": values.pop("device_kind", None),
        "provenance": provenance,
    }
    values.pop("gpu", None)          # the resolver's, below
    found = gpu.CPU if row["device_kind"] == "cpu" else gpu.resolve(evidence, db)
    row.update(found.columns())
    from_toml = found.evidence == gpu.USER and layers["toml"].get("gpu") == evidence.user
    gpu_provenance(provenance, found, named_by=provenance.get("gpu"), from_toml=from_toml)
    for key in identity.TYPED_PARAMS:
        value = values.pop(key, None)
        row[key] = identity.typed(key, value) if value is not None else None
    row["phase"] = values.pop("phase", None)
    params = {k: values[k] for k in sorted(values)}
    for key in identity.TYPED_PARAMS:
        if row[key] is not None:
            params[key] = row[key]
    row["all_params"] = params
    return row, found


# The rank a file or folder name gives (`sampled_rank-0`, `trace_rank3`, `local_rank_1`, AMD's
# rocprof wrapper's `rank_${pid}_${MPI_RANK}`; as `identity`'s rank token), whose number (and
# process id) `*` stands for in the name of the job.
_RANK_IN_NAME = re.compile(r"(?i)(?<![a-z])((?:local_?|global_?)?rank[_-]?)((?:\d{3,}[_-])?\d{1,5})(?!\d)")


def _rank_masked(path: str) -> str:
    """`path` with each rank token's number as `*`; where the token holds a process id and a rank
    (`rank_41001_0/results_41001_0.csv`), the same pair elsewhere in the path too."""
    pairs = {m.group(2) for m in _RANK_IN_NAME.finditer(path) if not m.group(2).isdigit()}
    masked = _RANK_IN_NAME.sub(r"\1*", path)
    for pair in pairs:
        masked = re.sub(rf"(?<![0-9]){re.escape(pair)}(?![0-9])", "*", masked)
    return masked


class _RankJob(NamedTuple):
    """What the ranks of one job share (`_distributed_jobs`): the runs of one key are its ranks."""

    root: str                  # the input root's name (`LogFile.root`)
    family: str
    world_size: int | None
    masked: str | None         # the file's path with its rank masked (`_rank_masked`): names telling the rank
    folder: str | None         # else its folder (a folder per rank, named the same but for it)


class _ProcessJob(NamedTuple):
    """What the processes of one job share (`_process_jobs`)."""

    root: str
    folder: str
    family: str
    traces: frozenset[str]     # the traces' names, the process id masked (`*_kernel_trace.csv`)


def _distributed_jobs(rows: list[dict], groups: list[list[_Unit]]) -> None:
    """Each row's `rank`, `world_size`, `distributed_job` (the job its rank belongs to, named
    after its runs: `traces/sampled_rank-*.json.gz`) and `ranks` (how many of the job's ranks
    the inputs hold), or null for a run that is no rank.
    A group whose ranks repeat is no one job (two jobs' traces in one folder, told apart by
    nothing but their names): its runs keep their rank and get no job."""
    jobs: dict[_RankJob, list[dict]] = {}
    for row, members in zip(rows, groups):
        sizes = {unit.hints.world_size for unit in members if unit.hints.world_size}
        row["rank"] = _whole(row["all_params"].get("rank"))
        row["world_size"] = sizes.pop() if len(sizes) == 1 else None
        row["distributed_job"] = None
        row["ranks"] = None
        held = {unit.hints.ranks for unit in members if unit.hints.ranks}
        if len(members) == 1 and len(held) == 1 and not row["duplicate_of"]:
            # one trace of several processes: a job of its own, its rows carry the ranks
            row["ranks"] = held.pop()
            row["world_size"] = row["world_size"] or row["ranks"]
            row["rank"] = None
            row["distributed_job"] = row["run"]    # (the report says how many ranks it holds)
            continue
        if row["rank"] is None or row["duplicate_of"] or row["session"] is not None:
            continue
        file = members[0].file
        # the ranks of one job: one folder's files named the same but for the rank, or (a folder
        # per rank) folders named the same but for the rank, holding files named alike
        masked: str | None = _rank_masked(str(file.rel))
        folder = None if masked != str(file.rel) else str(file.rel.parent)
        masked = None if folder is not None else masked
        key = _RankJob(file.root, file.family, row["world_size"], masked, folder)
        jobs.setdefault(key, []).append(row)
    for key, ranks in jobs.items():
        if len({row["rank"] for row in ranks}) < len(ranks):
            continue
        for row in ranks:
            row["distributed_job"] = _job_name(row["run"], key.masked, row["world_size"])
            row["ranks"] = len(ranks)
    _process_jobs(rows, groups)


def _process_jobs(rows: list[dict], groups: list[list[_Unit]]) -> None:
    """The rocprof or nsys runs of one folder named the same but for a process id or a
    launcher's number (`identity.process_in_name`) are the ranks of one job when their GPU
    work overlapped in time (every run's first activity before every other's last: the
    processes of one job run together, two runs of a program one after the other, `report1`
    and `report2`, do not; rocprof's times are its host's clock, the folder one host's; nsys's
    reports are set in UTC). The log names no rank: the ranks are the runs in the order of
    their numbers (a launcher's rank, or the order it starts processes in). Runs that did not
    all overlap stay apart."""
    candidates: dict[_ProcessJob, list[tuple[int, float, float, dict]]] = {}
    for row, members in zip(rows, groups):
        if row["distributed_job"] or row["rank"] is not None or row["duplicate_of"] or row["session"] is not None:
            continue
        files = list({unit.file.index: unit.file for unit in members}.values())
        family = files[0].family
        pids = {identity.process_in_name(f.rel.name, family)[0] for f in files}
        traced = [u for u in members if u.hints.gpu_start_ns is not None and u.hints.gpu_end_ns is not None]
        if family not in ("rocm", "nsys") or any(f.family != family for f in files) or len(pids) != 1 \
                or None in pids or not traced:
            continue
        starts, ends = [u.hints.gpu_start_ns for u in traced], [u.hints.gpu_end_ns for u in traced]
        # (the traces' names: a rank's info files may be a copy of another's, and read apart)
        key = _ProcessJob(files[0].root, str(files[0].rel.parent), family,
                          frozenset(identity.process_in_name(u.file.rel.name, family)[1] for u in traced))
        candidates.setdefault(key, []).append((int(pids.pop()), min(starts), max(ends), row))
    for key, found in candidates.items():
        if len(found) < 2 or max(start for _, start, _, _ in found) >= min(end for _, _, end, _ in found):
            continue
        found.sort(key=lambda item: item[0])
        name = " + ".join(sorted(key.traces))
        for rank, (_, _, _, row) in enumerate(found):
            folder = str(PurePosixPath(row["run"]).parent)
            row.update(rank=rank, world_size=len(found), ranks=len(found),
                       distributed_job=name if folder == "." else f"{folder}/{name}")


def _whole(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _job_name(run_id: str, masked: str | None, world_size: int | None) -> str:
    """`folder/sampled_rank-*.json.gz` (`rank_*`, for a folder per rank) from a rank's run id;
    where the names say no rank, the folder and the job's size (`traces (8 ranks)`)."""
    folder = str(PurePosixPath(run_id).parent)
    if masked is not None:
        own = _rank_masked(run_id)
        if own != run_id:
            return own
        name = PurePosixPath(masked).name
        return name if folder == "." else f"{folder}/{name}"
    return labels.job_name(folder, world_size)


def _job_request(members: list[_Unit], found: gpu.GpuIdentity, scripts: jobscripts.Scripts,
                 db: gpu.GpuDatabase) -> dict:
    """`job_gpus` and `job_script`: the GPUs the run's job script asked for, and which script
    said so (`jobscripts.request_for`; a script's GPU type names the run's GPU when the table's
    rows of that type hold it)."""
    if not scripts.asking:
        return {"job_gpus": None, "job_script": None}
    names_gpu = None
    if found.key:
        names_gpu = lambda gpu_type: any(spec.key == found.key for spec in db.candidates(gpu_type))  # noqa: E731
    logs = sorted({(u.file.root, u.file.rel) for u in members}, key=lambda p: str(p[1]))
    script = jobscripts.request_for(logs, names_gpu, scripts)
    if script is None:
        return {"job_gpus": None, "job_script": None}
    return {"job_gpus": script.request.gpus, "job_script": f"{script.rel}: {script.request.directive}"}


def gpu_provenance(provenance: dict, found: gpu.GpuIdentity, named_by: str | None = None,
                   from_toml: bool = False) -> None:
    """`provenance`'s gpu and gpu_model entries for the GPU `found`: the evidence that decided
    (the toml, the user, the log), for a path token the layer that gave it (`named_by`: path, or
    the job's echoed label); gpu_model "database" when the table knows the GPU."""
    provenance.pop("gpu", None)
    provenance.pop("gpu_model", None)
    if found.evidence:
        by_path = named_by if named_by in ("path", "label") else "path"
        provenance["gpu"] = ("toml" if from_toml else by_path if found.evidence == gpu.PATH
                             else gpu.LOG if found.evidence == gpu.CC else found.evidence)
    if found.key:
        provenance["gpu_model"] = "database"


def _evidence(members: list[_Unit], unit_facts: list[dict[str, dict]], settings: gpu.GpuSettings,
              named: dict[tuple, tuple[str, ...]]) -> gpu.Evidence:
    """What the run's units, their paths and folder, and the user say of its GPU: a unit's
    own device first, then its file's rows; GPU tokens of the file name, its folders (nearest
    first) and the job's echoed name; the names other logs of the folder give."""
    parts, tokens, toml = [], [], None
    for unit, facts in zip(members, unit_facts):
        own = (unit.hints.device_name,) if unit.hints.device_name else ()
        parts.append(gpu.Evidence(names=own))
        parts.append(unit.file.gpu)
        toml = toml or facts["toml"].get("gpu")
        name, dirs = identity.read_path(unit.file.rel)
        tokens += [f.get("gpu") for f in (name, *dirs)]
        # the folder the user gave (`roofreport build v100_logs/`), after the names below it
        tokens.append(identity.read_name(unit.file.root, is_file=False).get("gpu"))
        if facts["label"].get("gpu"):
            tokens.append(facts["label"]["gpu"])
    folders = {(u.file.root, str(u.rel_dir)) for u in members}
    neighbours = tuple(n for folder in sorted(folders) for n in named.get(folder, ()))
    return replace(gpu.Evidence.combined(parts), user=settings.gpu or toml,
                   path_tokens=tuple(dict.fromkeys(t for t in tokens if t)), neighbours=neighbours)


def _named_in_folders(groups: list[list[_Unit]], db: gpu.GpuDatabase) -> dict[tuple, tuple[str, ...]]:
    """(input, folder) -> the device names its logs give that name one GPU of the table: what
    completes a name another log of the folder cut short."""
    out: dict[tuple, dict[str, None]] = {}
    for members in groups:
        for unit in members:
            names = [unit.hints.device_name, *unit.file.gpu.names]
            for name in names:
                if name and db.match(name) is not None:
                    out.setdefault((unit.file.root, str(unit.rel_dir)), {})[name] = None
    return {folder: tuple(names) for folder, names in out.items()}


def _unit_facts(unit: _Unit) -> dict[str, dict]:
    """What each source says about one unit."""
    file, hints = unit.file, unit.hints
    toml: dict = {}
    for table in file.tables:
        toml.update({k: v for k, v in table.facts.items() if v is not None})
    if "gpu" in toml and str(toml["gpu"]).lower() == "cpu":
        toml["gpu"], toml["device_kind"] = None, "cpu"
    log = {"gpu": hints.device_name, "command": hints.command, "host": hints.host,
           "device_kind": hints.device_kind, "model": hints.model, "batch_size": hints.batch_size,
           "learning_rate": hints.learning_rate, "rank": hints.rank}
    for key, value in identity.read_command(hints.command).items():
        if log.get(key) is None:
            log[key] = value
    if not hints.command and hints.process:
        log["program"] = PurePosixPath(hints.process).name
    # a counter pass's `pmc_N/<host>/` folders say nothing of the run: its application's folder does
    name, dirs = identity.read_path(_log_dir(file) / file.rel.name)
    path, folder = dict(name.facts), {}
    for facts in (d.facts for d in dirs):          # nearest folder first; the file name wins
        for key, value in facts.items():
            (folder if key == "experiment" else path).setdefault(key, value)
    label = identity.read_name(hints.label, is_file=False).facts if hints.label else {}
    return {"toml": toml, "log": log, "path": path, "label": label, "folder": folder}


def _dir_facts(rel: PurePosixPath) -> dict:
    facts: dict = {}
    for folder in identity.read_path(rel)[1]:
        for key, value in folder.facts.items():
            facts.setdefault(key, value)
    return facts


def _merged(first: RunHints, second: RunHints) -> RunHints:
    """Hints of `first`, completed from `second`."""
    return RunHints(**{f.name: getattr(first, f.name) if getattr(first, f.name) is not None
                       else getattr(second, f.name) for f in fields(RunHints)})


def _text(value) -> str | None:
    return None if value is None else str(value)


# -- duplicates --------------------------------------------------------------------------------

def _link_duplicates(rows: list[dict], groups: list[list[_Unit]], ids: list[str]) -> None:
    """`duplicate_of`: the run of the original file (the same session of it, for a log of
    several sessions)."""
    run_of: dict[tuple[int, int | None], str] = {}
    for run_id, members in zip(ids, groups):
        for unit in members:
            run_of[(unit.file.index, unit.session)] = run_id
    for row, members in zip(rows, groups):
        original = members[0].file.duplicate_of
        row["duplicate_of"] = None
        if original is not None:
            session = members[0].session
            row["duplicate_of"] = run_of.get((original, session)) or run_of.get((original, None)) \
                or next(run for (index, _), run in run_of.items() if index == original)


def _table(rows: list[dict]) -> pl.DataFrame:
    """The runs table, in natural order of the ids (`q3.out#2` before `q3.out#10`)."""
    if not rows:
        return schema.empty("runs")
    rows = sorted(rows, key=lambda row: _natural(row["run"]))
    for row in rows:
        for column in ("params", "all_params", "provenance"):
            row[column] = json.dumps(row[column], sort_keys=True, default=str)
    frame = pl.DataFrame(rows, infer_schema_length=None)
    return schema.conform("runs", frame.select([c for c in frame.columns if c in schema.RUNS]))


def _natural(text: str) -> list:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", text)]
