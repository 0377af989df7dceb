"""How many training (or inference) steps a run's time covers, where its logs say, and how
they were counted (`iterations_source`).

A run stopped by a profiler timeout or a job time limit did as many steps as it had time for,
so its total kernel time says nothing comparable; its time per step does. A training step is
one optimizer step: one loss backward pass. The count is the first found of:

1. step ranges the program marked: PyTorch's `ProfilerStep#N` and `Optimizer.step#SGD.step`
   (regions of kind "step"), NVTX ranges named like a step (`step`, `train_step`, `iteration
   12`, `batch`), counted by their instances in one file of the run;
2. launches of the loss's backward kernel (`cunn_ClassNLLCriterion_updateGradInput_kernel`,
   `nll_loss_backward_*`, cross-entropy backward kernels of other frameworks): one per training
   step, validation batches never run it. The log's printed epoch size ("[0/4184]") is named
   beside it when it agrees;
3. the epoch size the program's own progress lines print (`pipeline/progress.py`) times the
   epochs they print to their end, for a run that was not cut short;
4. launches of a forward loss kernel (`cunn_ClassNLLCriterion_updateOutput_kernel`,
   `nll_loss_forward_*`): an inference or evaluation step computes its loss once, but so does
   every validation batch of a training run: the validation batches the log prints
   ("Test: [0/163]") are taken off, and the source says when they could not be.

Nothing else is guessed: a run whose logs show none of these has no iteration count.

Each count combines from per-file partials (`step_partials`, and the loss launches of each
file's time rows, `loss_counts`: kept with a dataset folder's batches), so a run's count is
the same whether its rows are read whole or in batches (`from_partials`).
"""

from __future__ import annotations

import polars as pl

from roofreport.model import timing

STEP_RANGE = (r"(?i)^(?:ProfilerStep#\d+|Optimizer\.step#\w+\.step|(?:train(?:ing)?|eval|val|inference)?[ _-]?"
              r"(?:step|iter|iteration|batch)(?:[ _#:-]*\d+)?)$")
LOSS_BACKWARD = (r"(?i)ClassNLLCriterion_updateGradInput|nll_loss(?:2d)?_backward|cross_?entropy\w*backward"
                 r"|SoftmaxCrossEntropy\w*Grad|softmax_xent\w*grad")
LOSS_KERNEL = (r"(?i)ClassNLLCriterion_update(?:Output|GradInput)|nll_loss(?:2d)?_(?:forward|backward)"
               r"|cross_?entropy|SoftmaxCrossEntropy|softmax_xent")

COLUMNS = {"run": pl.String, "iterations": pl.Int64, "iterations_source": pl.String}


PARTIAL = {"run": pl.String, "source_file": pl.String, "depth": pl.Int64, "steps": pl.Int64,
           "names": pl.List(pl.String)}
LOSS_COLUMNS = {"short_name": pl.String, "backward": pl.Boolean, "launches": pl.Int64}


def run_iterations(tables: dict[str, pl.DataFrame], time_rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """run, iterations, iterations_source for the runs whose logs give a count. `time_rows`:
    `timing.kernel_time_rows(tables)` when the caller has it already."""
    rows = timing.kernel_time_rows(tables) if time_rows is None else time_rows
    return from_partials(step_partials(tables.get("regions")), loss_counts(rows, ["run"]), tables.get("runs"))


def from_partials(steps: pl.DataFrame, losses: pl.DataFrame, runs: pl.DataFrame | None = None) -> pl.DataFrame:
    """run, iterations, iterations_source from the runs' step-range partials (`step_partials`,
    any number per run and file: they combine), the loss launches of each run's time source
    (`loss_counts` of its rows: run, short_name, backward, launches) and the progress the runs
    table holds (`runs`: the epoch size, epochs and validation batches the log printed), in the
    order of the module docstring."""
    progress = _progress(runs)
    found: list[pl.DataFrame] = []
    backward = losses.filter(pl.col("backward")) if losses.height else losses
    for part in (_step_ranges(steps), _loss_launches(backward, progress), _printed(progress),
                 _loss_launches(losses, progress, forward=True)):
        if not part.height:
            continue
        if found:
            part = part.join(pl.concat([f.select("run") for f in found]), on="run", how="anti")
        if part.height:
            found.append(part.select([pl.col(c).cast(t) for c, t in COLUMNS.items()]))
    if not found:
        return pl.DataFrame(schema=COLUMNS)
    return pl.concat(found).sort("run")


def _progress(runs: pl.DataFrame | None) -> dict[str, dict]:
    """run -> its progress columns (epoch size, epochs, validation batches, cut short)."""
    if runs is None or not runs.height or "epoch_steps" not in runs.columns:
        return {}
    said = runs.filter(pl.col("epoch_steps").is_not_null())
    wanted = ["run", "epoch_steps", "logged_epochs", "validation_steps", "progress_source", "cut_short"]
    return {row["run"]: row for row in said.select([c for c in wanted if c in said.columns]).iter_rows(named=True)}


def _printed(progress: dict[str, dict]) -> pl.DataFrame:
    """The epoch size the log prints times its epochs, for runs that ran to their end."""
    rows = []
    for run, said in progress.items():
        epochs = said.get("logged_epochs")
        if said.get("cut_short") or not said.get("epoch_steps") or not epochs:
            continue
        rows.append({"run": run, "iterations": said["epoch_steps"] * epochs,
                     "iterations_source": f"the log's epoch size, {said['epoch_steps']:,} training batches"
                                          f"{f' × {epochs} epochs' if epochs > 1 else ''} ({said['progress_source']})"})
    return pl.DataFrame(rows, schema=COLUMNS) if rows else pl.DataFrame()


def step_partials(regions: pl.DataFrame | None) -> pl.DataFrame:
    """Per run and file, the step ranges that count (`PARTIAL`): the file's outermost depth
    of them, their instances there and their names. Partials of one run combine
    (`combine_steps`): the run counts at its outermost depth over all its files."""
    if regions is None or not regions.height:
        return pl.DataFrame(schema=PARTIAL)
    named = pl.col("name").str.strip_chars().str.contains(STEP_RANGE)
    steps = regions.filter((named | (pl.col("kind") == "step")) & pl.col("run").is_not_null())
    if not steps.height:
        return pl.DataFrame(schema=PARTIAL)
    # Ranges nested in a step range (a step inside an epoch range is fine) are counted once:
    # only the outermost step ranges of a run.
    steps = steps.with_columns(pl.col("path").fill_null(pl.col("name")).str.count_matches("/").alias("depth"))
    outer = steps.filter(pl.col("depth") == pl.col("depth").min().over("run", "source_file"))
    return combine_steps(outer.group_by("run", "source_file", maintain_order=True).agg(
        pl.col("depth").first().cast(pl.Int64), pl.col("count").fill_null(1).sum().cast(pl.Int64).alias("steps"),
        pl.col("name").unique(maintain_order=True).alias("names")))


def combine_steps(partials: pl.DataFrame) -> pl.DataFrame:
    """Step-range partials of the same run and file made one (the outermost depth wins; at one
    depth, instances add and names join): associative, in any grouping."""
    if not partials.height:
        return pl.DataFrame(schema=PARTIAL)
    top = partials.filter(pl.col("depth") == pl.col("depth").min().over("run", "source_file"))
    return top.group_by("run", "source_file", maintain_order=True).agg(
        pl.col("depth").first(), pl.col("steps").sum(),
        pl.col("names").list.explode(keep_nulls=False, empty_as_null=False).unique(maintain_order=True)).select(list(PARTIAL))


def _step_ranges(partials: pl.DataFrame) -> pl.DataFrame:
    if not partials.height:
        return pl.DataFrame()
    per_file = combine_steps(partials)
    per_file = per_file.filter(pl.col("depth") == pl.col("depth").min().over("run")).select(
        "run", "source_file", pl.col("steps").alias("iterations"), pl.col("names").list.len().alias("names"),
        pl.col("names").list.sort().list.first().alias("example"))
    # One file per run, like its time: an nsys report exported twice (SQLite and CSV) is one count.
    best = per_file.sort(["run", "iterations", "source_file"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first()
    return best.select("run", "iterations", pl.format("{} instances of {} step range name(s) ({}, ...)",
                                                      pl.col("iterations"), pl.col("names"), pl.col("example"))
                       .alias("iterations_source"))


def loss_counts(rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """`keys` + short_name, backward, launches: the launches of loss kernels among time rows
    (`timing.TIME_COLUMNS`), per `keys` (["run"]; a file's partial adds its file and rank);
    `backward`: the loss's backward kernel (`LOSS_BACKWARD`), one launch per training step."""
    if not rows.height:
        return pl.DataFrame(schema={**{k: rows.schema[k] for k in keys}, **LOSS_COLUMNS})
    loss = rows.filter(pl.col("name").str.contains(LOSS_KERNEL) | pl.col("name").str.contains(LOSS_BACKWARD))
    return loss.group_by(*keys, "short_name", maintain_order=True).agg(
        pl.col("name").str.contains(LOSS_BACKWARD).any().alias("backward"),
        pl.col("count").sum().cast(pl.Int64).alias("launches"))


def _loss_launches(counts: pl.DataFrame, progress: dict[str, dict], forward: bool = False) -> pl.DataFrame:
    """The launches of the most launched loss kernel of `counts` (`loss_counts`), per run: the
    loss's backward kernel (training steps), or with `forward` any loss kernel, validation
    batches the log prints taken off."""
    if not counts.height:
        return pl.DataFrame()
    per_kernel = counts.group_by("run", "short_name").agg(pl.col("launches").sum().alias("iterations"))
    top = per_kernel.sort(["run", "iterations", "short_name"], descending=[False, True, False]) \
        .group_by("run", maintain_order=True).first()
    out = []
    for run, launches, kernel in top.select("run", "iterations", "short_name").iter_rows():
        said = progress.get(run, {})
        size, epochs = said.get("epoch_steps"), said.get("logged_epochs") or 1
        if not forward:
            agrees = f"; the log prints {size:,} training batches an epoch" if size and launches == size * epochs else ""
            out.append({"run": run, "iterations": launches,
                        "iterations_source": f"launches of the loss's backward kernel {kernel}, one per training "
                                             f"step{agrees}"})
            continue
        validation = said.get("validation_steps")
        if validation and launches > validation * epochs:
            out.append({"run": run, "iterations": launches - validation * epochs,
                        "iterations_source": f"launches of the loss kernel {kernel} less the {validation * epochs:,} "
                                             "validation batches the log prints"})
        else:
            out.append({"run": run, "iterations": launches,
                        "iterations_source": f"launches of the loss kernel {kernel} (training and validation "
                                             "batches alike: the logs do not tell them apart)"})
    return pl.DataFrame(out, schema=COLUMNS)
