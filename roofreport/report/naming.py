"""How the report names runs and GPUs: by what they are, never by their paths.

A run is shown by its `label` (model · GPU · parameters, `pipeline/labels.py`) and a GPU by the
run's `gpu_label`; both come from the `runs` table. Runs are listed in one order everywhere
(model, experiment, program, GPU, then the label with its numbers compared as numbers, so that
`bs 4` comes before `bs 16`), and a section that shows runs side by side groups them by what
they share (`groups`): the runs of one model (or program) in one experiment differ only in
their GPU and parameters, which become the column headings (one model on two GPUs side by side).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

import polars as pl

from roofreport.gpu import NOT_NAMED
from roofreport.pipeline.labels import SEPARATOR, param_order

NO_GPU = NOT_NAMED      # the one name of an unknown GPU, in run labels and the report alike
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")
_PARAM_HEADINGS = {"batch_size": "bs", "learning_rate": "lr", "timeout_s": "timeout (s)"}


def _param_text(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def natural(text: str) -> tuple:
    """A sort key reading numbers as numbers: "bs 4" < "bs 16" < "bs 64"."""
    return tuple((0, float(part), "") if i % 2 else (1, 0.0, part.lower())
                 for i, part in enumerate(_NUMBER.split(text)) if part)


@dataclass(frozen=True)
class Group:
    """Runs shown side by side: `title` is what they share, `columns` (run, heading) what differs."""

    title: str
    columns: list[tuple[str, str]]


class RunNames:
    """run id -> label, GPU label and place in the report's order, from a `runs` table (copies
    included, so that a file of a copy is named too)."""

    def __init__(self, runs: pl.DataFrame | None = None):
        runs = runs if runs is not None else pl.DataFrame()
        wanted = ["run", "label", "gpu_label", "gpu_model", "model", "program", "experiment", "params"]
        present = [c for c in wanted if c in runs.columns]
        rows = runs.select(present).iter_rows(named=True) if runs.height and "run" in present else []
        self._rows = {r["run"]: r for r in rows}
        for row in self._rows.values():
            # an experiment the label leaves out (it restated the parameters, pipeline/labels.py)
            # parts no runs: they are grouped by what their labels say
            parts = str(row.get("label") or "").split(SEPARATOR)
            if row.get("experiment") and str(row["experiment"]) not in parts:
                row["experiment"] = None
        self._gpu_by_key: dict[str, str] = {}
        for named_run in self._rows.values():
            if named_run.get("gpu_model") and named_run.get("gpu_label"):
                self._gpu_by_key.setdefault(named_run["gpu_model"], named_run["gpu_label"])

    def label(self, run: str | None) -> str:
        """The run's label; a run the table does not know keeps its id (never happens for runs
        the pipeline made; a hand-built dataset may lack labels)."""
        if run is None:
            return "–"
        row = self._rows.get(run)
        return (row.get("label") if row else None) or run

    def relabel_source(self, text: str) -> str:
        """An analysis' "RUN (GPU): how" naming a run by its id, as "LABEL: how"."""
        head, colon, how = text.partition(": ")
        run = head.rsplit(" (", 1)[0] if head.endswith(")") else head
        if run not in self._rows:
            return text
        return f"{self.label(run)}{colon}{how}"

    def gpu(self, run: str | None) -> str:
        """The GPU a run ran on, as the report names it everywhere."""
        row = self._rows.get(run) if run else None
        return (row.get("gpu_label") if row else None) or NO_GPU

    def gpu_of_key(self, gpu_model: str | None, spec=None) -> str:
        """The label of a GPU database key (as the analyses group by), or the spec's own name."""
        if gpu_model and gpu_model in self._gpu_by_key:
            return self._gpu_by_key[gpu_model]
        if spec is not None:
            return getattr(spec, "label", None) or spec.name
        return gpu_model or NO_GPU

    def facets(self, run: str) -> list[tuple[str, str]]:
        """The pieces that name the run, as (column heading, text): its model or program, the
        program's arguments its label keeps, its GPU, its experiment where the label shows it, and
        each parameter the label shows (`kernel_size`, `3`). A table of runs that differ in one or
        two of them shows those as columns."""
        row = self._rows.get(run) or {}
        parts = self.label(run).split(SEPARATOR)
        out: list[tuple[str, str]] = []
        program = str(row.get("program") or "")
        if not row.get("model") and program and parts[0].startswith(program):
            out.append(("Program", program))
            if parts[0][len(program):].strip():
                out.append(("Arguments", parts[0][len(program):].strip()))
        else:
            out.append(("Model" if row.get("model") else "Run", parts[0]))
        out.append(("GPU", self.gpu(run)))
        if row.get("experiment") and str(row["experiment"]) != parts[0]:
            out.append(("Experiment", str(row["experiment"])))
        try:
            params = json.loads(row.get("params") or "{}")
        except (TypeError, ValueError):
            params = {}
        for key in sorted((k for k in params if k != "model_size"), key=param_order):
            out.append((_PARAM_HEADINGS.get(key, key), _param_text(params[key])))
        return out

    def split_label(self, run: str) -> tuple[str, str]:
        """(what the run's group shares: model, GPU, experiment; the rest of its label)."""
        row = self._rows.get(run) or {}
        shared = {str(row[k]) for k in ("gpu_label", "experiment") if row.get(k)}
        parts = self.label(run).split(SEPARATOR)
        head = [parts[0]] + [p for p in parts[1:] if p in shared]
        return SEPARATOR.join(head), SEPARATOR.join(p for p in parts[1:] if p not in shared)

    def _key(self, run: str, fields: tuple[str, ...]) -> tuple:
        """The run's values of `fields`; a missing one sorts after every named one."""
        row = self._rows.get(run) or {}
        return tuple((0, natural(str(row[k]))) if row.get(k) else (1, ()) for k in fields)

    def _group_key(self, run: str, by_gpu: bool = False) -> tuple:
        return self._key(run, ("model", "experiment", "program") + (("gpu_label",) if by_gpu else ()))

    def sort_key(self, run: str) -> tuple:
        return self._key(run, ("model", "experiment", "program", "gpu_label")) + (natural(self.label(run)),)

    def order(self, runs) -> list[str]:
        """`runs` (any iterable, duplicates dropped) in the report's order."""
        return sorted(dict.fromkeys(runs), key=self.sort_key)

    def groups(self, runs, max_columns: int, by_gpu: bool = False) -> list[Group]:
        """`runs` grouped by model, experiment and program, in order (GPU by GPU within a group;
        `by_gpu`: a group per GPU). A group wider than `max_columns` runs is cut where the GPU
        changes, and a GPU's runs wider than that into even parts (7 -> 4 + 3, not 6 + 1). A
        group's title is the label parts its runs share, a column's heading the parts that differ
        (a group of one run: its label, "Share")."""
        by_key: dict[tuple, list[str]] = {}
        for run in self.order(runs):
            by_key.setdefault(self._group_key(run, by_gpu), []).append(run)
        out = []
        for members in by_key.values():
            out += [self._group(part, members) for part in self._parts(members, max_columns)]
        return out

    def _parts(self, members: list[str], max_columns: int) -> list[list[str]]:
        if len(members) <= max_columns:
            return [members]
        by_gpu: dict[str, list[str]] = {}
        for run in members:
            by_gpu.setdefault(self.gpu(run), []).append(run)
        parts: list[list[str]] = []
        whole = False            # the last part holds whole GPUs only: another small one may join it
        for runs in by_gpu.values():
            if whole and len(parts[-1]) + len(runs) <= max_columns:
                parts[-1] = parts[-1] + runs
                continue
            size = -(-len(runs) // -(-len(runs) // max_columns))
            parts += [runs[start:start + size] for start in range(0, len(runs), size)]
            whole = len(runs) <= max_columns
        return parts

    def _group(self, part: list[str], members: list[str]) -> Group:
        if len(members) == 1 or len(part) == 1:
            return Group(self.label(part[0]), [(part[0], "Share")])
        return self.together(part)

    def together(self, runs: list[str]) -> Group:
        """How a table or chart names `runs` shown side by side: every label part they all share
        once, in the title, and each run's other parts as its heading. What one table's columns
        share belongs in its caption whatever other tables of the group hold (`alexnet ·
        expCloudML · lr 0.001` over `K80 · bs 32`, `P40 · bs 16`..., never `lr 0.001` in every
        heading)."""
        part = list(runs)
        split = [self.label(run).split(SEPARATOR) for run in part]
        common = [p for p in split[0] if all(p in parts for parts in split[1:])]
        headings = []
        for run in part:
            rest = [p for p in self.label(run).split(SEPARATOR) if p not in common]
            # a run whose label holds nothing the others lack goes by the group's last word
            headings.append((run, SEPARATOR.join(rest) or (common[-1] if common else self.label(run))))
        first = self._rows.get(part[0]) or {}
        if not first.get("model") and first.get("program") and not any(first["program"] in p for p in common):
            common.insert(0, str(first["program"]))     # a group of one program's runs: say which
        return Group(SEPARATOR.join(common) or "Runs", headings)


def in_order(frame: pl.DataFrame, names: RunNames) -> pl.DataFrame:
    """The rows of `frame` (with a `run` column) in the report's order of runs, stable within a run."""
    if frame.height < 2:
        return frame
    order = names.order(frame["run"].to_list())
    rank = pl.DataFrame({"run": order, "__rank": list(range(len(order)))},
                        schema={"run": frame.schema["run"], "__rank": pl.Int64})
    return (frame.with_row_index("__row").join(rank, on="run", how="left")
            .sort("__rank", "__row").drop("__rank", "__row"))


def _parameter_list_start(name: str) -> int | None:
    """Where a demangled kernel name's parameter list begins: the `(` matching its final `)`,
    when what comes before it is a name (its template brackets closed); None when the name has
    no such list (`sgemm_largek_lds64`, `[CUDA memcpy HtoD]`)."""
    if not name.endswith(")"):
        return None
    depth = 0
    for index in range(len(name) - 1, 0, -1):
        depth += {")": 1, "(": -1}.get(name[index], 0)
        if depth == 0:
            head = name[:index]
            return index if head.strip() and head.count("<") == head.count(">") else None
    return None


def kernel_labels(names: list[str]) -> dict[str, str]:
    """The printed label of each of one table's kernel names: the name less what tells none of
    the table's kernels apart. A demangled name loses its return type (`void `: every kernel
    returns void) and its parameter list (the launch's argument types), keeping its template
    arguments and launch shapes; a parameter list stays where two of the table's kernels differ
    in it alone. The HTML gives every name in full."""
    def unreturned(name: str) -> str:
        return name[5:] if name and name.startswith("void ") and len(name) > 5 else name

    def bare(name: str) -> str:
        text = unreturned(name)
        start = _parameter_list_start(text) if text else None
        return text[:start] if start else text

    first = {name: bare(name) for name in dict.fromkeys(names)}
    taken = Counter(first.values())
    return {name: label if taken[label] == 1 else unreturned(name) for name, label in first.items()}
