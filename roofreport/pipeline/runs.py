"""Run identity: which files belong to one run, and what the run was (model, GPU, batch...).

Users encode a run's configuration in directory and file names (`a100/vgg11/ncu-log-vgg11.txt`,
`reports/ncu_resnet18_v100.txt`, `out.alexnet_16_0.01_k80_full.756013`) and sometimes only in
the command line a profiler echoed. The rules (README: Tables):

* a file whose name carries configuration of its own is the run that configuration names,
  within its directory (`imagenet/final/alexnet_16_0.01_k80_full`);
* otherwise, files in a directory whose path carries configuration form one run (the directory);
* otherwise a file stands alone and is its own run.

A `roofreport.toml` beside the logs overrides any of it (see `load_overrides`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path, PurePosixPath
from typing import Callable


class _Regex:
    """A pattern compiled on first use (`match`, `search`, `sub`... are the compiled pattern's):
    every run imports this module, and most names are told by the first patterns tried. The
    `re.compile` call stays written out (tests/test_hostile_static.py reads the patterns)."""

    __slots__ = ("_make", "_compiled")

    def __init__(self, make: Callable[[], re.Pattern]):
        self._make, self._compiled = make, None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = self._make()
        return getattr(self._compiled, name)


_B = r"(?<![A-Za-z0-9])"   # token boundary (path separators, _ - . and spaces)
_E = r"(?![A-Za-z0-9])"

GPU_TOKEN = _Regex(lambda: re.compile(
    _B + r"(k80|k40(?:st|[cmst])?|k20(?:xm|[cmx])?|k10|m40|m60|p4|p40|p100|v100s?|t4|a100|a10g?|a30|a40|a800|"
    r"a[2-6]000|a4500|a5500|l4|l20|l40s?|h100|h200|h20|h800|gh200|b[123]00|gb200|"
    r"rtx[\s_-]?\d{4}(?:[\s_-]?(?:ti|super|ada))?|rtx[\s_-]?a\d{4}|gtx[\s_-]?\d{3,4}(?:[\s_-]?ti)?|"
    r"titan[\s_-]?(?:xp?|v|rtx|z|black)|rtx8000|quadro)" + _E, re.I))
MODEL_TOKEN = _Regex(lambda: re.compile(
    _B + r"(resnet\d+|resnext\d+\w*|wide_resnet\d+\w*|alexnet|vgg\d+(?:_bn)?|densenet\d*|squeezenet[\d_]*|"
    r"inception(?:_?v\d)?|googlenet|mobilenet(?:_?v\d)?(?:_\w+)?|shufflenet\w*|efficientnet\w*|mnasnet\w*|"
    r"lenet\d*|vit\w*|bert\w*|gpt\d*\w*|llama\d*\w*|mistral\w*|t5\w*|unet\w*|yolo\w*)" + _E, re.I))
# 2019 NYU course runs: [timeout_][general_NNN_]<arch>_<batch>_<lr>_<gpu>_<experiment>
COURSE_2019 = _Regex(lambda: re.compile(
    r"^(?:\d+_)?(?P<model>[a-z]+\d*)_(?:\d+_)?(?P<batch>\d+)_(?P<lr>\d*\.\d+|\d+e-?\d+)_(?P<gpu>[a-z]+\d+)_"
    r"(?P<experiment>[a-z_]+?)$", re.I))
# pranshu777 order: <model>_<gpu>_<batch>_<experiment>
MODEL_GPU_BATCH = _Regex(lambda: re.compile(
    r"^(?P<model>[a-z]+\d*)_(?P<gpu>[a-z]\d+)_(?P<batch>\d+)_(?P<experiment>[a-z_]+?)$", re.I))
# Runs without a GPU in the name: general_[<timeout>_]<arch>_<batch>_<lr>_<experiment>
GENERAL_2019 = _Regex(lambda: re.compile(
    r"^general_(?:\d+_)?(?P<model>[a-z]+\d*)_(?P<batch>\d+)_(?P<lr>\d*\.\d+)_"
    r"(?P<experiment>[a-z_]+?)$", re.I))
# The label `hw_<batch>_<lr>_<arch>[_<gpu>]` that some 2019 jobs echo on their first line.
HW_2019 = _Regex(lambda: re.compile(
    r"^hw_(?P<batch>\d+)_(?P<lr>\d*\.\d+)_(?P<model>[a-z]+\d*)(?:_(?P<gpu>[a-z]\d+))?$", re.I))
# Whole-name patterns, tried in order; the model must be a known architecture (or `alex`).
_NAME_PATTERNS = (COURSE_2019, MODEL_GPU_BATCH, GENERAL_2019, HW_2019)
_STEM_PREFIX = _Regex(lambda: re.compile(
    r"^(?:out|prev_out|n_out|ma_out|conv_out)\.|^(?:ncu|nsys|nvprof|smi)[-_](?:log[-_])?|"
    r"^(?:ncu[-_]final[-_]metric|nsys[-_]final[-_]metric)[-_]", re.I))
_JOB_SUFFIX = _Regex(lambda: re.compile(r"(?:\.\d{4,}|%20)+$"))
_BATCH = _Regex(lambda: re.compile(r"(?:^|[_\-.])(?:bs|batch|b)[_\-]?(\d+)(?=$|[_\-.])", re.I))
_CMD_MODEL = _Regex(lambda: re.compile(r"(?:--arch|-a)[ =]([A-Za-z0-9_]+)"))
_CMD_BATCH = _Regex(lambda: re.compile(r"(?:--batch-size|--batch_size|-b)[ =](\d+)"))
_CMD_LR = _Regex(lambda: re.compile(r"(?:--lr|--learning-rate)[ =]([0-9.eE-]+)"))


@dataclass(frozen=True)
class RunAttrs:
    model: str | None = None
    gpu: str | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    experiment: str | None = None

    def merged(self, other: "RunAttrs") -> "RunAttrs":
        """Fill what this one lacks from `other`."""
        return replace(self, **{f.name: getattr(self, f.name) if getattr(self, f.name) is not None
                                else getattr(other, f.name) for f in fields(self)})

    def any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))

    def label(self) -> str:
        parts = [self.model, self.batch_size, self.learning_rate, self.gpu, self.experiment]
        return "_".join(str(p) for p in parts if p is not None)


def clean_stem(name: str) -> str:
    """`out.alexnet_16_0.01_k80_full.756013` -> `alexnet_16_0.01_k80_full`."""
    stem = _JOB_SUFFIX.sub("", name)
    for suffix in (".txt", ".csv", ".log", ".out", ".sqlite", ".tsv", ".time", ".metrics", ".profile",
                   ".prof", ".nvvp", ".json"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    stem = _JOB_SUFFIX.sub("", stem)
    return _STEM_PREFIX.sub("", stem)


def attrs_from_name(name: str) -> RunAttrs:
    """Configuration encoded in one path component or file name."""
    stem = clean_stem(name)
    for pattern in _NAME_PATTERNS:
        m = pattern.match(stem)
        if m and (MODEL_TOKEN.fullmatch(m["model"]) or m["model"].lower() == "alex"):
            return _course_attrs(m.groupdict())
    gpu = GPU_TOKEN.search(stem)
    model = MODEL_TOKEN.search(stem)
    batch = _BATCH.search(stem)
    return RunAttrs(
        model=model.group(1).lower() if model else None,
        gpu=re.sub(r"[\s_-]+", "", gpu.group(1)).upper() if gpu else None,
        batch_size=int(batch.group(1)) if batch else None,
    )


def _course_attrs(d: dict) -> RunAttrs:
    model = d["model"].lower()
    return RunAttrs(model={"alex": "alexnet"}.get(model, model),
                    gpu=d["gpu"].upper() if d.get("gpu") else None, batch_size=int(d["batch"]),
                    learning_rate=float(d["lr"]) if d.get("lr") else None,
                    experiment=d["experiment"].lower() if d.get("experiment") else None)


def attrs_from_command(command: str | None) -> RunAttrs:
    if not command:
        return RunAttrs()
    model = _CMD_MODEL.search(command)
    batch = _CMD_BATCH.search(command)
    lr = _CMD_LR.search(command)
    try:
        lr_value = float(lr.group(1)) if lr else None
    except ValueError:
        lr_value = None
    return RunAttrs(model=model.group(1).lower() if model else None,
                    batch_size=int(batch.group(1)) if batch else None, learning_rate=lr_value)


def attrs_from_dirs(rel_dir: PurePosixPath) -> RunAttrs:
    attrs = RunAttrs()
    for part in reversed(rel_dir.parts):  # the nearest directory wins
        attrs = attrs.merged(attrs_from_name(part))
    return attrs


@dataclass(frozen=True)
class RunAssignment:
    run: str
    attrs: RunAttrs
    source_dir: str


def assign(rel_path: PurePosixPath, root_name: str) -> RunAssignment:
    """Which run a file (path relative to the input root) belongs to, by its path alone."""
    rel_dir = rel_path.parent
    dir_attrs = attrs_from_dirs(rel_dir)
    file_attrs = attrs_from_name(rel_path.name)
    dir_label = "" if str(rel_dir) == "." else str(rel_dir)
    own = _adds_to(file_attrs, dir_attrs)
    if own:
        label = file_attrs.label()
        run = f"{dir_label}/{label}" if dir_label else label
    elif dir_attrs.any():
        run = dir_label
    else:
        stem = _standalone_label(rel_path.name)
        run = f"{dir_label}/{stem}" if dir_label else stem
    return RunAssignment(run=run or root_name, attrs=file_attrs.merged(dir_attrs),
                         source_dir=dir_label or ".")


def _standalone_label(name: str) -> str:
    """A file that stands alone is its own run: `out.expCloudML.546584` -> `expCloudML.546584`
    (the Slurm job id kept, so two jobs of an unnamed configuration stay two runs)."""
    stem = clean_stem(name) or name
    job = _JOB_SUFFIX.search(name)
    jobs = re.findall(r"\.(\d{4,})", job.group(0)) if job else []
    return f"{stem}.{jobs[-1]}" if jobs else stem


def _adds_to(file_attrs: RunAttrs, dir_attrs: RunAttrs) -> bool:
    """True when the file name says something its directories do not (or contradicts them)."""
    for f in fields(file_attrs):
        value = getattr(file_attrs, f.name)
        if value is not None and value != getattr(dir_attrs, f.name):
            return True
    return False


# -- overrides -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Override:
    """One `[[run]]` table of a roofreport.toml: files matching `match` (a glob relative to the
    toml's folder) get `name` and the given attributes."""

    match: str
    name: str | None
    attrs: dict


def load_overrides(folder: Path) -> list[Override]:
    """`roofreport.toml` in `folder`, if any (globs use fnmatch: `*` also crosses `/`):

        [[run]]
        match = "a100/*/*"          # glob, relative to this file
        name = "A100 runs"           # optional: the run id
        gpu = "A100-SXM4-40GB"       # optional attributes: model, gpu, batch_size, ...
    """
    path = folder / "roofreport.toml"
    if not path.is_file():
        return []
    import tomllib  # (only when a folder has one)

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = []
    for table in data.get("run", []):
        table = dict(table)
        match = table.pop("match", "**/*")
        name = table.pop("name", None)
        out.append(Override(match=str(match), name=name, attrs=table))
    return out


def apply_overrides(rel_path: PurePosixPath, assignment: RunAssignment,
                    overrides: list[Override]) -> RunAssignment:
    for ov in overrides:
        if fnmatch.fnmatchcase(str(rel_path), ov.match):
            known = {f.name for f in fields(RunAttrs)}
            attrs = replace(assignment.attrs, **{k: v for k, v in ov.attrs.items() if k in known})
            assignment = RunAssignment(run=ov.name or assignment.run, attrs=attrs,
                                       source_dir=assignment.source_dir)
    return assignment
