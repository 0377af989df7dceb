"""Job scripts beside the logs: how many GPUs a batch job asked for, read as its runs' metadata.

Course folders keep the scripts that ran their jobs next to the logs. `#SBATCH --gres=gpu:k80:4`
says the job had four K80s, which no nvprof summary says: its times are summed over the four.
A script is no profiler log (sniffing skips it); its directives are read from the head sniffing
read anyway (`read_request`): a scheduler reads them only up to the script's first command.

* Slurm: `#SBATCH --gres=gpu[:TYPE]:N`, `--gpus=[TYPE:]N` (`-G`), `--gpus-per-node` (times
  `--nodes`), and `--output`/`-o` (the log the job writes). The last of an option wins, as in
  sbatch; `##SBATCH` is a comment.
* PBS: `#PBS -l select=N:ngpus=G` or `nodes=N:gpus=G`, `-o`; LSF: `#BSUB -gpu "num=G"`, `-n`, `-o`.

Which runs a script speaks for (`request_for`), first found:
1. the scripts whose output pattern (`out.alexnet_4_0.01_k80_backprop.%j`) names one of the
   run's log files;
2. the scripts of the run's folder, else of the nearest folder above it that has any GPU
   request: those asking for the run's GPU type (`gpu:k80:4` for a K80 run), else those naming
   no type, when they agree on one count. Scripts edited from job to job (the `##SBATCH` lines
   of course folders) are why a disagreement gives nothing rather than a guess.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import PurePosixPath

_DIRECTIVE = re.compile(r"^#(SBATCH|PBS|BSUB)(?=[\s-])\s*(.*)$")
_COMMAND = re.compile(r"^\s*[^#\s]")     # the first command ends the directives
_SLURM_GRES = re.compile(r"(?:^|,)gpu(?::([A-Za-z][\w.-]*))?(?::(\d+))?(?=,|$)")
_TYPED_COUNT = re.compile(r"^(?:([A-Za-z][\w.-]*):)?(\d+)$")
_PBS_GPUS = re.compile(r"(?:^|:)(?:ngpus|gpus)=(\d+)")
_PBS_NODES = re.compile(r"(?:select|nodes)=(\d+)")
_LSF_GPUS = re.compile(r"num=(\d+)")
# Slurm's filename patterns: %j job id, %A/%a array job/task, %x job name, %u user, %N node...
_SLURM_FIELDS = re.compile(r"%(\d*)([AajJnNstuUx%])")


@dataclass(frozen=True)
class JobRequest:
    """What one job script asks for: its GPUs (`gpus`, over all nodes; `gpu_type` as written,
    `k80`), the log it writes (`output`, the scheduler's pattern) and the directive said
    (`directive`, for the report: `--gres=gpu:k80:4`)."""

    scheduler: str
    gpus: int | None = None
    gpu_type: str | None = None
    output: str | None = None
    directive: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> JobRequest | None:
        return cls(**data) if data else None


def looks_like_script(text: str) -> bool:
    """A cheap test before `read_request`: the head holds a scheduler directive."""
    return "#SBATCH" in text or "#PBS" in text or "#BSUB" in text


def read_request(text: str) -> JobRequest | None:
    """The request of a job script's directives, or None when it has none."""
    options: dict[str, str] = {}
    scheduler = None
    for line in text.splitlines():
        if _COMMAND.match(line):
            break
        found = _DIRECTIVE.match(line.strip())
        if not found:
            continue
        scheduler = scheduler or found.group(1)
        for key, value in _options(found.group(2)):
            options[key] = value        # the last wins, as in sbatch
    if scheduler is None:
        return None
    reader = {"SBATCH": _slurm, "PBS": _pbs, "BSUB": _lsf}[scheduler]
    return reader(options)


def _options(text: str) -> list[tuple[str, str]]:
    """`--gres=gpu:k80:4 -o out.%j` -> [("--gres", "gpu:k80:4"), ("-o", "out.%j")]."""
    try:
        words = shlex.split(text, comments=True)
    except ValueError:
        words = text.split()
    out = []
    index = 0
    while index < len(words):
        word = words[index]
        if word.startswith("--") and "=" in word:
            key, _, value = word.partition("=")
            out.append((key, value))
        elif word.startswith("-") and index + 1 < len(words) and not words[index + 1].startswith("-"):
            out.append((word, words[index + 1]))
            index += 1
        else:
            out.append((word, ""))
        index += 1
    return out


def _slurm(options: dict[str, str]) -> JobRequest:
    nodes = _int((options.get("--nodes") or options.get("-N") or "1").split("-")[0]) or 1
    output = options.get("--output") or options.get("-o")
    name = options.get("--job-name") or options.get("-J")
    if output and name:                 # `%x.out`: the job's name, where the script gives it
        output = re.sub(r"(?<!%)%x", lambda _: name, output)
    if "--gres" in options:
        found = _SLURM_GRES.search(options["--gres"])
        if found:
            count = int(found.group(2)) if found.group(2) else 1
            return JobRequest("slurm", count * nodes, found.group(1), output, f"--gres={options['--gres']}")
    for key, per_node in (("--gpus", False), ("-G", False), ("--gpus-per-node", True)):
        found = _TYPED_COUNT.match(options.get(key, ""))
        if found:
            count = int(found.group(2)) * (nodes if per_node else 1)
            return JobRequest("slurm", count, found.group(1), output, f"{key}={options[key]}")
    return JobRequest("slurm", None, None, output)


def _pbs(options: dict[str, str]) -> JobRequest:
    resources = options.get("-l", "")
    gpus = _PBS_GPUS.search(resources)
    nodes = _PBS_NODES.search(resources)
    count = int(gpus.group(1)) * (int(nodes.group(1)) if nodes else 1) if gpus else None
    return JobRequest("pbs", count, None, options.get("-o"), f"-l {resources}" if gpus else None)


def _lsf(options: dict[str, str]) -> JobRequest:
    found = _LSF_GPUS.search(options.get("-gpu", ""))
    count = int(found.group(1)) if found else None
    return JobRequest("lsf", count, None, options.get("-o"), f"-gpu {options['-gpu']}" if found else None)


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


# -- which runs a script speaks for -----------------------------------------------------------

@dataclass(frozen=True)
class Script:
    """A job script found among the inputs: where it lies (below its input) and what it asks."""

    rel: PurePosixPath
    root: str
    request: JobRequest


@lru_cache(maxsize=4096)
def output_pattern(output: str) -> re.Pattern:
    """A scheduler's output pattern as a regex over file names (`out.x.%j` ~ `out.x.805184`)."""
    name = PurePosixPath(output).name
    parts, last = [], 0
    for found in _SLURM_FIELDS.finditer(name):
        parts.append(re.escape(name[last:found.start()]))
        field = found.group(2)
        parts.append("%" if field == "%" else r"\d+" if field in "AajJst" else r".+")
        last = found.end()
    parts.append(re.escape(name[last:]))
    return re.compile("".join(parts) + r"$")


class Scripts:
    """The job scripts among the inputs, indexed once for `request_for`: by the literal start
    of their output pattern and by their folder. (Scanning every script for every run, each
    pattern compiled again, made a campaign's run grouping quadratic: 20 s of 26 for 4.7k
    files, hours at 50k.)"""

    def __init__(self, scripts: list[Script]):
        asking = [s for s in scripts if s.request.gpus is not None]
        self.asking = bool(asking)
        # root -> literal start of the output pattern -> (position, pattern, script)
        self._named: dict[str, dict[str, list[tuple[int, re.Pattern, Script]]]] = {}
        self._here: dict[tuple[str, PurePosixPath], list[Script]] = {}   # (root, folder) -> scripts
        for position, script in enumerate(asking):
            if script.request.output:
                start = _literal_start(script.request.output)
                self._named.setdefault(script.root, {}).setdefault(start, []).append(
                    (position, output_pattern(script.request.output), script))
            self._here.setdefault((script.root, script.rel.parent), []).append(script)

    def named(self, root: str, names: list[str]) -> list[Script]:
        """The scripts below `root` whose output pattern matches one of the file `names`, in
        the order found."""
        starts = self._named.get(root)
        if not starts:
            return []
        found: dict[int, Script] = {}
        for name in names:
            for length in range(len(name) + 1):
                for position, pattern, script in starts.get(name[:length], ()):
                    if position not in found and pattern.match(name):
                        found[position] = script
        return [found[position] for position in sorted(found)]

    def here(self, root: str, folder: PurePosixPath) -> list[Script]:
        return self._here.get((root, folder), [])


def _literal_start(output: str) -> str:
    """What every file name an output pattern matches starts with (up to its first field)."""
    name = PurePosixPath(output).name
    first = _SLURM_FIELDS.search(name)
    return name if first is None else name[:first.start()]


def request_for(logs: list[tuple[str, PurePosixPath]], names_gpu: Callable[[str], bool] | None,
                scripts: Scripts | list[Script]) -> Script | None:
    """The script that speaks for a run whose log files are `logs` ((input, path below it)),
    on a GPU that `names_gpu(type)` says a script's GPU type names (None: the run's GPU is not
    known): the rules of the module docstring; None when no rule finds one. `scripts`: indexed
    once (`Scripts`) where many runs ask."""
    if not isinstance(scripts, Scripts):
        scripts = Scripts(scripts)
    if not scripts.asking or not logs:
        return None
    names = [rel.name for _, rel in logs]
    root, first = logs[0]
    named = scripts.named(root, names)
    if named and len({s.request.gpus for s in named}) == 1:
        return named[0]
    for folder in [first.parent, *first.parent.parents]:
        here = scripts.here(root, folder)
        if here:
            return _agreeing(here, names_gpu, names)
    return None


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[\W_]+", name.lower()) if len(w) > 2 and not w.isdigit()}


def _agreeing(scripts: list[Script], names_gpu: Callable[[str], bool] | None, logs: list[str]) -> Script | None:
    """The script that speaks for the run among those of one folder (module docstring, rule 2):
    of several that agree, the one whose name shares most words with the logs' names."""
    typed = [s for s in scripts if s.request.gpu_type]
    if names_gpu is not None:
        mine = [s for s in typed if names_gpu(s.request.gpu_type)]
        candidates = mine or [s for s in scripts if not s.request.gpu_type]
    else:
        candidates = scripts
    counts = {s.request.gpus for s in candidates}
    if len(counts) != 1:
        return None
    said = set().union(*(_words(name) for name in logs))
    return min(candidates, key=lambda s: (-len(_words(s.rel.stem) & said), str(s.rel)))
