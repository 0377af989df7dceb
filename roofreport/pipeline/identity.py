"""What a name or a command line says about a run: model, GPU, parameters, experiment.

Users encode a run's configuration in directory and file names and the profiler echoes the
command it ran; this module reads both, for any course or campaign, by the conventions people
use (DESIGN.md §2, the course field guide in the corpus):

* whole-name layouts that need their order to be read: `<arch>_<batch>_<lr>_<gpu>_<experiment>`
  (`out.alexnet_16_0.01_k80_full.756013`), `<model>_<gpu>_<batch>_<experiment>`,
  `hw_<batch>_<lr>_<arch>[_<gpu>]`, and a name that is one `key_value` (`workers_8`, `optim_adam`);
* otherwise spans read anywhere in the name, in this order: GPU tokens (`a100`, `rtx8000`: the
  one token table of `roofreport.gpu`, which resolves them to GPUs), model
  tokens (`resnet18`, `llama3` with a size such as `-8b`), bit widths (`draft_4bit`),
  `key_true/false`, known `key<N>`/`key_N` parameters (`bs64`, `toks3`, `lr_0.1`, `workers_8`),
  precisions (`fp16`, `bf16`), job ids (`.756013`, `slurm-766274`, a trailing `_142093`);
  tool and report words (`ncu`, `nsys`, `log`, `cuda_gpu_trace`, `smi`, `kineto`...) and history
  or copy markers (`prev_`, `_deleted_in_history`) say nothing about the run and are dropped;
* what is left: words (the experiment or variant, `baseline`, `specdecode8-1`, `no_bn`) and bare
  numbers, which only tell siblings apart.

`NameFacts.key` is what sets a name apart from its siblings (a variant token); two files of one
directory with the same key are logs of one run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import PurePosixPath

from roofreport import gpu

_SEPARATOR = r"[\s_-]"
# Fields every run has a column for; every other fact is a parameter.
IDENTITY_FIELDS = ("model", "gpu", "experiment", "program", "job")
TYPED_PARAMS = {"batch_size": int, "learning_rate": float, "workers": int, "epochs": int,
                "optimizer": str, "precision": str}

_KEY_ALIASES = {
    "bs": "batch_size", "batch": "batch_size", "batchsize": "batch_size", "batch_size": "batch_size",
    "b": "batch_size", "per_device_train_batch_size": "batch_size", "train_batch_size": "batch_size",
    "lr": "learning_rate", "learning_rate": "learning_rate", "learningrate": "learning_rate",
    "workers": "workers", "num_workers": "workers", "nworkers": "workers", "nw": "workers", "j": "workers",
    "epochs": "epochs", "epoch": "epochs", "ep": "epochs",
    "optim": "optimizer", "optimizer": "optimizer", "opt": "optimizer",
    "precision": "precision", "dtype": "precision",
}


@cache
def _patterns() -> dict[str, re.Pattern]:
    """Compiled on first use: most runs read a handful of names."""
    before, after = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
    return {
        "extension": re.compile(
            r"\.(?:txt|csv|tsv|log|out|err|sqlite|db|time|metrics|profile|prof|nvvp|json|gz|qdrep|"
            r"nsys-rep|ncu-rep|collapsed|dat|stdout|stderr)$", re.I),
        "job_suffix": re.compile(r"(?:\.(\d{4,})|%20)$"),
        "out_prefix": re.compile(r"^(?:([A-Za-z]+)_)?out\.", re.I),
        # a variable the job script never filled in (`alexnet_4_0.01_%GPU%_full`, `${GPU}`)
        "placeholder": re.compile(r"%\w+%|\$\{\w+\}|\$\w+|%[jxAaNnu](?![A-Za-z0-9])"),
        # whole-name layouts
        "course_2019": re.compile(
            r"^(?:general_)?(?:(?P<timeout>\d+)_)?(?P<model>[a-z]+\d*)_(?:(?P<timeout2>\d+)_)?(?P<batch>\d+)_"
            r"(?P<lr>\d*\.\d+|\d+e-?\d+)_(?:(?P<gpu>[a-z]+\d+)_)?(?P<experiment>[a-z][a-z_]*)$", re.I),
        "model_gpu_batch": re.compile(
            r"^(?P<model>[a-z]+\d*)_(?P<gpu>[a-z]\d+)_(?P<batch>\d+)_(?P<experiment>[a-z][a-z_]*)$", re.I),
        "hw_2019": re.compile(
            r"^hw_(?P<batch>\d+)_(?P<lr>\d*\.\d+)_(?P<model>[a-z]+\d*)(?:_(?P<gpu>[a-z]\d+))?$", re.I),
        "key_value": re.compile(
            r"^(?P<key>[a-z][a-z]*(?:_[a-z]+)?)[_=-](?P<value>\d+(?:\.\d+)?|true|false)$", re.I),
        "key_word": re.compile(
            r"^(?P<key>optim|optimizer|opt|precision|dtype)[_=-](?P<value>[a-z][a-z0-9]*)$", re.I),
        # spans
        # GPU tokens: the one token table's (gpu/names.py), words parted by `_`, `-` or blanks
        "gpu": re.compile(
            before + f"({gpu.token_alternatives(_SEPARATOR)})" + r"(?:x(?P<count>\d{1,2}))?"
            # rocprof-compute names a workload's folder by the GPU and its stepping: `MI300X_A1`
            + r"(?:[_-]a[01](?![A-Za-z0-9]))?" + after + gpu.not_another_gpu(_SEPARATOR), re.I),
        "model": re.compile(
            before + r"(resnet\d+|resnext\d+[a-z0-9]*|wide_resnet\d+|alexnet|alex|vgg\d+(?:_bn)?|densenet\d*|"
            r"squeezenet[\d_]*|inception(?:_?v\d)?|googlenet|mobilenet(?:_?v\d)?|shufflenet[a-z0-9]*|"
            r"efficientnet[a-z0-9]*|mnasnet[a-z0-9]*|regnet[a-z0-9]*|convnext[a-z0-9]*|swin[a-z0-9]*|"
            r"lenet\d*|vit|bert|distilbert|roberta|deberta|gpt\d*|llama\d*|mistral|mixtral|qwen\d*|gemma\d*|"
            r"falcon|bloom|t5|unet|yolo[a-z0-9]*)(?:[_-]?(?P<size>\d+(?:\.\d+)?[bm]))?" + after, re.I),
        # a distributed job's process: `sampled_rank-0`, `trace_rank3`, `local_rank_1` (one trace per
        # rank); AMD's rocprof wrapper for MPI names each rank's folder `rank_${pid}_${MPI_RANK}`
        # (olcf/hip-training-series `Lecture4/jacobi/rocprof_wrapper.sh`): the rank is the last number
        "rank": re.compile(before + r"(?:local_?|global_?)?rank[_-]?(?:\d{3,}[_-])?(?P<rank>\d{1,5})" + after, re.I),
        "bits": re.compile(before + r"(?:(?P<key>[a-z]+)[_-])?(?P<bits>\d{1,2})[_-]?bits?" + after, re.I),
        "boolean": re.compile(before + r"(?P<key>[a-z][a-z0-9]*)[_=-](?P<value>true|false)" + after, re.I),
        "param": re.compile(
            before + r"(?P<key>bs|batch_?size|batch|b|lr|learning_?rate|workers|num_?workers|nw|epochs?|ep|toks|"
            r"tokens|seq_?len|seq|threads|iters?|steps|gpus|nodes|ranks|size|kernel|stride|dim|layers|heads|"
            r"hidden)[_=-]?(?P<value>\d+(?:\.\d+)?(?:e-?\d+)?)" + after, re.I),
        "word_param": re.compile(
            before + r"(?P<key>optim|optimizer|precision|dtype)[_=-](?P<value>[a-z][a-z0-9]*)" + after, re.I),
        "precision": re.compile(
            before + r"(fp64|fp32|fp16|bf16|tf32|fp8|int8|int4|amp|half|float16|float32|bfloat16)" + after, re.I),
        "job": re.compile(r"(?:^|[_.-])(?:slurm[_-](?P<slurm>\d+)|(?P<pid>\d{5,}))$", re.I),
        "stamp": re.compile(r"(?<![0-9])(\d{8}[_-]?\d{6})(?![0-9])"),
        "marker": re.compile(
            before + r"(_?deleted_in_history|deleted|history|backups?|bak|prev|previous|old|copy|orig)" + after, re.I),
        "tool": re.compile(
            # ROCm report names first: `memory_copy_trace` is no copy, `hip_api_stats` no parameter
            before + r"((?:kernel|memory_copy|hip_api|hsa_api|marker_api|rccl_api|scratch_memory|"
            r"memory_allocation|hcc_ops|async_copy|roctx)_(?:trace|stats)|counter_collection(?:_stats)?|"
            r"agent_info|domain_stats|(?:hip_|hsa_|copy_|ops_)stats|pmc_perf|pmc_kernel_top|pmc_dispatch_info|"
            r"sysinfo|roofline|timestamps|SQ_[A-Z0-9_]+|rocprof(?:v[23])?|rocprof[_-]compute|omniperf|"
            r"rocm[_-]smi|amd[_-]smi|"
            r"cuda_gpu_trace|cuda_gpu_kern_sum|cuda_api_sum|cuda_gpu_mem_time_sum|nvtx_kern_sum|"
            r"nvtx_sum|gputrace|apitrace|gpukernsum|cudaapisum|gpumemtimesum|nvtxsum|nvtxkernsum|"
            r"nvidia[_-]smi|ncu|nsys|nvprof|kineto|key_averages|pt\.trace|"
            r"(?:compute|accounted)[_-]apps|dcgmi?|dcgm[_-]exporter|exporter|scrapes?|prom|tegrastats|"
            r"nsight|smi|dmon|pmon|logs?|outputs?|out|reports?|stats?|traces?|base|metrics?|final|profiles?|"
            r"profiling|prof|summary|sum|results?|raw|rep|qdrep|sqlite|nvvp|csv|tsv|txt|gpu|cuda|api|kern|"
            r"utilization|usage|util|monitor|power|data|runs|slurm|timeline|collapsed|tmp|temp|query|details|"
            r"page|console|columns?|export|exported|dump|events?|kernels?|tesla|geforce|nvidia|amd|instinct|radeon|"
            r"(?:ncu|nsys|nvprof)\d{4}(?:\.\d+)*)" + after, re.I),
        # words that name a log's format: never a parameter's name (`log_1` is not log=1)
        "format_word": re.compile(
            r"(ncu|nsys|nvprof|smi|log|out|output|report|trace|stats|metrics?|summary|slurm|job|pid|results?)$", re.I),
        # between words: `_`, blanks, the marks left where a fact was read, and `.` except
        # inside a number (`0.001`); `-` joins (`specdecode8-1`, `torch-ex`)
        "word_break": re.compile(r"[\s_\x00]+|(?<![0-9])\.|\.(?![0-9])"),
        "number": re.compile(r"^\d+(?:\.\d+)?(?:e-?\d+)?$", re.I),
    }


@dataclass(frozen=True)
class NameFacts:
    """What one path component says: `facts` (model, gpu, job, experiment and parameters) and
    `key` (what tells it from its siblings). Copy and history markers (`prev_`, `old`,
    `_deleted_in_history`) say nothing of the run; which files are copies is
    pipeline/duplicates.py's to tell."""

    facts: dict = field(default_factory=dict)
    key: tuple = ()

    def get(self, name: str):
        return self.facts.get(name)


@lru_cache(maxsize=8192)
def read_name(name: str, is_file: bool = True) -> NameFacts:
    """Facts in one file name (extension, Slurm job suffix and `out.` prefix understood) or one
    directory name. Cached: the answer is shared, never to be changed by the caller."""
    pats = _patterns()
    stem, facts = name, {}
    if is_file:
        stem, job = _strip_suffixes(stem)
        if job:
            facts["job"] = job
    filled = pats["placeholder"].sub("", stem)
    if filled != stem:
        stem = re.sub(r"_{2,}", "_", filled).strip("_")
    prefix = pats["out_prefix"].match(stem)
    if prefix:
        stem = stem[prefix.end():]
    whole = _whole_name(stem)
    if whole is not None:
        facts.update(whole)
        return NameFacts(facts, _key(facts, ()))
    facts_here, words = _spans(stem)
    facts.update({k: v for k, v in facts_here.items() if k not in facts})
    return NameFacts(facts, _key(facts, words))


def read_path(rel_path: PurePosixPath) -> tuple[NameFacts, list[NameFacts]]:
    """The file name's facts and its directories' (nearest first)."""
    dirs = [read_name(part, is_file=False) for part in reversed(rel_path.parent.parts)]
    return read_name(rel_path.name), dirs


def _strip_suffixes(stem: str) -> tuple[str, str | None]:
    pats, job = _patterns(), None
    while True:
        before = stem
        found = pats["job_suffix"].search(stem)
        if found:
            job = job or found.group(1)
            stem = stem[: found.start()]
        ext = pats["extension"].search(stem)
        if ext and ext.start() > 0:
            stem = stem[: ext.start()]
        if stem == before:
            return stem, job


def _whole_name(stem: str) -> dict | None:
    """The layouts read as a whole, where the order says what each number is."""
    pats = _patterns()
    for layout in ("course_2019", "model_gpu_batch", "hw_2019"):
        found = pats[layout].match(stem)
        if found and pats["model"].fullmatch(found["model"]):
            return _layout_facts(found.groupdict())
    found = pats["key_value"].match(stem) or pats["key_word"].match(stem)
    # one word (`workers_8`, `cuda_0`) or a known two-word key (`num_workers_8`): `triton_silu_2025`
    # is no parameter called triton_silu
    plain = found is not None and ("_" not in found["key"] or found["key"].lower() in _KEY_ALIASES)
    if plain and not pats["format_word"].match(found["key"]) and not pats["model"].fullmatch(stem):
        key = _KEY_ALIASES.get(found["key"].lower(), found["key"].lower())
        return {key: typed(key, found["value"])}
    return None


def _layout_facts(groups: dict) -> dict:
    facts = {"model": canonical_model(groups["model"]), "batch_size": int(groups["batch"])}
    if groups.get("lr"):
        facts["learning_rate"] = float(groups["lr"])
    if groups.get("gpu"):
        facts["gpu"] = groups["gpu"].upper()
    if groups.get("experiment"):
        facts["experiment"] = groups["experiment"].lower()
    timeout = groups.get("timeout") or groups.get("timeout2")
    if timeout:
        # `out.alexnet_600_16_0.01_k80_full_mem`: nvprof --timeout 600 (the course field guide)
        facts["timeout_s"] = int(timeout)
    return facts


def _spans(stem: str) -> tuple[dict, list[str]]:
    """Facts read anywhere in the name; the words and numbers left over."""
    pats = _patterns()
    facts: dict = {}
    text = stem

    def take(pattern: str, read) -> None:
        nonlocal text
        for found in list(pats[pattern].finditer(text)):
            read(found)
        text = pats[pattern].sub("\x00", text)

    def gpu_token(match):
        facts.setdefault("gpu", re.sub(r"[\s_-]+", " ", match.group(1)).upper())
        if match.group("count"):
            facts.setdefault("gpus", int(match.group("count")))
    take("gpu", gpu_token)

    def model(match):
        facts.setdefault("model", canonical_model(match.group(1)))
        if match.group("size"):
            facts.setdefault("model_size", match.group("size").lower())
    take("model", model)

    take("rank", lambda m: facts.setdefault("rank", int(m["rank"])))

    def bits(match):
        key = f"{match['key'].lower()}_bits" if match["key"] else "precision"
        facts.setdefault(key, int(match["bits"]) if match["key"] else f"int{match['bits']}")
    take("bits", bits)
    take("boolean", lambda m: facts.setdefault(m["key"].lower(), m["value"].lower() == "true"))

    def param(match):
        key = _KEY_ALIASES.get(match["key"].lower().replace("-", "_"), match["key"].lower())
        facts.setdefault(key, typed(key, match["value"]))
    take("param", param)
    take("word_param", param)
    take("precision", lambda m: facts.setdefault("precision", m.group(1).lower()))
    take("stamp", lambda m: facts.setdefault("job", m.group(1)))
    job = pats["job"].search(text)
    if job:
        facts.setdefault("job", job["slurm"] or job["pid"])
        text = text[: job.start()] + "\x00"
    # Tool and report words first: ROCm's `memory_copy_trace` holds the copy marker's word.
    text = pats["tool"].sub("\x00", text)
    text = pats["marker"].sub("\x00", text)
    words = [w for w in (c.strip(".-") for c in pats["word_break"].split(text)) if w]
    experiment = [w for w in words if not pats["number"].match(w)]
    if experiment:
        facts["experiment"] = "_".join(experiment)
    return facts, words


def _key(facts: dict, words) -> tuple:
    """What tells a name from its siblings: every fact and leftover word (numbers too)."""
    values = tuple(sorted((k, str(v)) for k, v in facts.items()))
    return values + tuple(w.lower() for w in words)


def canonical_model(name: str) -> str:
    lowered = name.lower()
    return {"alex": "alexnet"}.get(lowered, lowered)


_INT64 = 1 << 63


def typed(key: str, value):
    """A parameter's value as its column's type (text stays text when it does not convert)."""
    kind = TYPED_PARAMS.get(key)
    text = str(value)
    if isinstance(value, bool):
        return value
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        if kind is int or (kind is None and re.fullmatch(r"-?\d+", text)):
            number = int(float(text))
            # (a column of whole numbers is 64-bit: `-b 1e308` is text, as `-b many` is)
            return number if -_INT64 <= number < _INT64 else text
        if kind is float or (kind is None and _patterns()["number"].match(text)):
            return float(text)
    except (ValueError, OverflowError):   # (OverflowError: `-b inf`)
        return text
    return text.lower() if kind is str else text


# -- command lines -----------------------------------------------------------------------------

_LAUNCHERS = {"python", "python3", "python2", "torchrun", "accelerate", "deepspeed", "mpirun",
              "mpiexec", "srun", "bash", "sh", "time", "env", "singularity", "apptainer", "launch",
              "uv", "run", "exec", "-m"}
_FLAG_ALIASES = {
    "arch": "model", "a": "model", "model": "model", "model_name": "model", "model_name_or_path": "model",
    "b": "batch_size", "batch_size": "batch_size", "bs": "batch_size", "batch": "batch_size",
    "per_device_train_batch_size": "batch_size", "train_batch_size": "batch_size",
    "lr": "learning_rate", "learning_rate": "learning_rate",
    "j": "workers", "workers": "workers", "num_workers": "workers",
    "epochs": "epochs", "epoch": "epochs", "num_train_epochs": "epochs",
    "optimizer": "optimizer", "optim": "optimizer", "opt": "optimizer",
    "precision": "precision", "dtype": "precision", "mixed_precision": "precision",
}
_PRECISION_FLAGS = {"fp16": "fp16", "bf16": "bf16", "amp": "amp", "half": "fp16", "tf32": "tf32"}
# Numeric flags that say where or how a run was launched, not what it computed.
_NOT_PARAMS = {"gpu", "gpus", "device", "local_rank", "rank", "world_size", "port", "print_freq",
               "log_interval", "save_freq", "eval_freq", "dist_url", "p", "nproc_per_node", "nnodes"}


def read_command(command: str | None) -> dict:
    """Model, parameters and program of a profiled command line
    (`python main.py --arch resnet18 -b 64 --lr 0.10 DIR`, `./q3_2a.o 1`)."""
    if not command:
        return {}
    tokens = command.split()
    facts: dict = {}
    program_at = _program_index(tokens)
    if program_at is None:
        return facts
    facts["program"] = PurePosixPath(tokens[program_at]).name
    index = program_at + 1
    while index < len(tokens):
        flag, value, used = _flag(tokens, index)
        index += used
        if flag is None:
            continue
        name = flag.lower().replace("-", "_")
        key = _FLAG_ALIASES.get(name)
        if value is None:
            if name in _PRECISION_FLAGS:
                facts.setdefault("precision", _PRECISION_FLAGS[name])
            continue
        if key == "model":
            facts.setdefault("model", canonical_model(PurePosixPath(value).name))
        elif key is not None:
            facts.setdefault(key, typed(key, value))
        elif name not in _NOT_PARAMS and _patterns()["number"].match(value):
            facts.setdefault(name, typed(name, value))
    return facts


def _program_index(tokens: list[str]) -> int | None:
    """The script or binary a launcher runs (`python main.py` -> main.py)."""
    for index, token in enumerate(tokens):
        base = PurePosixPath(token).name.lower()
        if token.startswith("-") or "=" in token or re.fullmatch(r"python\d(?:\.\d+)?", base) \
                or base in _LAUNCHERS:
            continue
        return index
    return None


def _flag(tokens: list[str], index: int) -> tuple[str | None, str | None, int]:
    """(flag, value, tokens used) at `index`: `--key=value`, `--key value`, `-k value`, `--switch`."""
    token = tokens[index]
    if not token.startswith("-") or len(token) < 2 or _patterns()["number"].match(token.lstrip("-")):
        return None, None, 1
    flag = token.lstrip("-")
    if "=" in flag:
        flag, value = flag.split("=", 1)
        return flag, value, 1
    nxt = tokens[index + 1] if index + 1 < len(tokens) else None
    if nxt is not None and (not nxt.startswith("-") or _patterns()["number"].match(nxt.lstrip("-"))):
        return flag, nxt, 2
    return flag, None, 1


# rocprofv3 names each process's files `<pid>_<report>.csv`, rocprofv2 `<report>_<pid>.csv`
# (`families/rocm/columns.py`): `mpirun -n 4 rocprofv3 --kernel-trace -- app` writes a set per
# rank into its host's folder (AMD's "Using rocprofv3 with MPI": `2293212_agent_info.csv`, ...).
PID_IN_NAME = re.compile(r"^(\d{3,})_(?=[a-z])|(?<=[a-z])_(\d{3,})(?=\.[a-z]+$)", re.I)


# nsys names each process's report with the rank or process id a launcher gives it (`-o
# report.%q{OMPI_COMM_WORLD_RANK}`, `%p`, a wrapper's `$1_$(printf %02d $PMI_RANK)`): the last
# number of the name before its extension.
LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")


def process_in_name(name: str, family: str = "rocm") -> tuple[str | None, str]:
    """The process id (or launcher's number) a rocprof or nsys file name holds, and the name
    with `*` for it (`pipeline/runs.py` groups the files of one job's processes by it;
    `duplicates.py` keeps identical per-process files of one job apart)."""
    if family == "nsys":
        path = PurePosixPath(name)
        found = LAST_NUMBER.search(path.stem)
        if found is None:
            return None, name
        return found.group(1), path.stem[:found.start()] + "*" + path.stem[found.end():] + path.suffix
    found = PID_IN_NAME.search(name)
    if found is None:
        return None, name
    return found.group(1) or found.group(2), PID_IN_NAME.sub(lambda m: "*_" if m.group(1) else "_*", name, count=1)
