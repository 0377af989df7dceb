"""Mutants of real logs, and what reading them must give (issue #27): the machinery of
`test_robust_fuzz.py` (a fixed seed, a minute in CI) and of `benchmarks/bench_fuzz.py` (as
many mutants as asked for).

Real files of every family are taken from the corpus (`tests.conftest.CORPUS`: the first files
of each reader, small ones), and each is damaged in one way, by a `random.Random(seed)`: cut at a random byte,
bytes flipped, a NUL run inserted, every line end made CRLF, a line duplicated or deleted, the
header line duplicated, a number swapped for `nan`, `-1`, `1e308` or `<OVERFLOW>`. All the
mutants of a run are read at once by `roofreport parse` (one process: the CLI as a user runs
it), and `check` says what is wrong with each:

* the exit code is 0 or 1, no traceback, no internal error (a reader's own exception, or the
  whole command's: "this is a roofreport defect");
* a file's status is ok, partial, error or skipped; an error names the file;
* a CSV mutant read "ok" lost no row: its data rows counted with `csv` are the lines read
  (`norowlost.py`; a row left out makes the file partial, issue #34);
* every record complete before the damage is read as in the original (same table, line and
  values), and a mutant that is still a valid log (CRLF, the header line repeated) gives the
  original's rows, with the original's status.
"""

from __future__ import annotations

import random
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from roofreport.cli import cli
from roofreport.pipeline.sniff import sniff
from tests import norowlost
from tests.conftest import CORPUS   # ../shared/corpus, or where ROOFREPORT_CORPUS says

MAX_BYTES = 200 * 1024
NOT_LOGS = {"MANIFEST.tsv", "README.md"}
NUMBER = re.compile(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
SWAPS = [b"nan", b"-1", b"1e308", b"<OVERFLOW>"]
# Mutations that leave a valid log: the original's rows, status ok.
VALID = {"crlf", "header twice"}


@dataclass(frozen=True)
class Mutant:
    source: Path          # the corpus file
    original: str         # its copy's name in the originals' folder (`original_name`)
    name: str             # file name in the mutants' folder
    kind: str             # what was done
    data: bytes
    damage_line: int | None   # first line whose bytes changed (None: not line-shaped, or none)

    def describe(self) -> str:
        return f"{self.source.relative_to(CORPUS)} [{self.kind}] as {self.name}"


def corpus_files(per_reader: int = 2) -> list[Path]:
    """The first `per_reader` corpus files (by path) under MAX_BYTES that each reader claims:
    every family, every kind of file."""
    picked: dict[str, list[Path]] = {}
    for path in sorted(CORPUS.rglob("*")):
        if not path.is_file() or path.name in NOT_LOGS or path.stat().st_size > MAX_BYTES:
            continue
        sniffed = sniff(path)
        if sniffed.spec is not None and len(picked.setdefault(sniffed.spec.name, [])) < per_reader:
            picked[sniffed.spec.name].append(path)
    return [path for name in sorted(picked) for path in picked[name]]


def original_name(number: int, source: Path) -> str:
    """The name of the `number`th file's copy among the originals (names repeat in the corpus)."""
    return f"o{number:03d}_{source.name}"


def _line_of(data: bytes, offset: int) -> int:
    head = data[:offset]
    return head.count(b"\n") + head.count(b"\r") - head.count(b"\r\n") + 1


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def mutate(source: Path, data: bytes, kind: str, rng: random.Random) -> tuple[bytes, int | None]:
    """`data` damaged by `kind`, and the first line it damages."""
    if kind == "cut":
        at = rng.randrange(len(data) + 1)
        return data[:at], _line_of(data, at)
    if kind == "flip":
        at = rng.randrange(len(data))
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:], _line_of(data, at)
    if kind == "nul run":
        at = rng.randrange(len(data) + 1)
        return data[:at] + b"\0" * rng.randrange(1, 4096) + data[at:], _line_of(data, at)
    if kind == "crlf":
        return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), None
    lines = _lines(data)
    if kind in ("line twice", "line deleted") and lines:
        at = rng.randrange(len(lines))
        copy = lines[at] if lines[at].endswith((b"\n", b"\r")) else lines[at] + b"\n"
        new = lines[:at] + ([copy] if kind == "line twice" else []) + lines[at:] if kind == "line twice" \
            else lines[:at] + lines[at + 1:]
        return b"".join(new), at + 1
    if kind == "header twice":
        at = _header_index(source, lines)
        if at is None:
            return data, None
        return b"".join(lines[:at + 1] + [lines[at]] + lines[at + 1:]), at + 2
    if kind == "number swapped":
        found = list(NUMBER.finditer(data))
        if not found:
            return data, None
        hit = found[rng.randrange(len(found))]
        return data[:hit.start()] + rng.choice(SWAPS) + data[hit.end():], _line_of(data, hit.start())
    raise ValueError(kind)


def _header_index(source: Path, lines: list[bytes]) -> int | None:
    """The line of a CSV file's column header (its first line holding a separator and no
    digit-only field), for CSV-like files only."""
    if source.suffix.lower() not in (".csv", ".tsv"):
        return None
    for index, line in enumerate(lines[:50]):
        fields = re.split(rb"[,\t]", line.strip())
        if len(fields) > 2 and not any(re.fullmatch(rb'"?[\d.]+"?', f.strip()) for f in fields):
            return index
    return None


KINDS = ["cut", "flip", "nul run", "crlf", "line twice", "line deleted", "header twice", "number swapped"]


def mutants(files: list[Path], seed: int, per_file: int) -> list[Mutant]:
    """`per_file` mutants of each file, each of one kind (every kind in turn), from `seed`."""
    rng = random.Random(seed)
    out = []
    for number, source in enumerate(files):
        data = source.read_bytes()
        line_shaped = not data.startswith((b"\x1f\x8b", b"SQLite format 3"))
        for index in range(per_file):
            kind = KINDS[(number + index) % len(KINDS)]
            if not line_shaped and kind not in ("cut", "flip", "nul run"):
                kind = ("cut", "flip", "nul run")[index % 3]
            damaged, line = mutate(source, data, kind, rng)
            out.append(Mutant(source, original_name(number, source), f"m{len(out):04d}_{source.name}",
                              kind, damaged, line if line_shaped else None))
    return out


# -- reading them, and what must come out ----------------------------------------------------

def parse_folder(folder: Path, out: Path) -> tuple[int, str, dict[str, pl.DataFrame]]:
    """`roofreport parse FOLDER -o OUT` as the CLI runs it: exit code, its output, the tables."""
    shutil.rmtree(out, ignore_errors=True)
    result = CliRunner().invoke(cli, ["parse", str(folder), "-o", str(out), "--quiet", "--jobs", "1"])
    tables = {path.stem: pl.read_parquet(path) for path in out.glob("*.parquet")} if out.is_dir() else {}
    return result.exit_code, (result.output or "") + repr(result.exception or ""), tables


def _rows(tables: dict[str, pl.DataFrame], name: str) -> dict[str, list[tuple[int, tuple]]]:
    """table -> (source_line, the row's other cells) of one file's rows."""
    out = {}
    for table, frame in tables.items():
        if table in ("runs", "files") or "source_file" not in frame.columns:
            continue
        mine = frame.filter(pl.col("source_file").str.ends_with(name))
        # (a launch_id is a place, as a line is: a trace row's number, which a line inserted
        # before it moves; pipeline/duplicates.py counts it among the places too)
        keep = [c for c in mine.columns if c not in ("source_file", "run", "launch_id")]
        rows = mine.select(pl.col(keep).cast(pl.String))   # (a damaged date may be no Python date)
        # (a row of no one line, such as a trace's whole-trace step, has none: None)
        lines = [None if line is None else int(line) for line in rows["source_line"].to_list()]
        out[table] = list(zip(lines, rows.rows()))
    return out


def check(mutant: Mutant, tables: dict[str, pl.DataFrame], originals: dict[str, pl.DataFrame]) -> list[str]:
    """What is wrong with one mutant's read (empty when nothing is)."""
    problems = []
    files = tables.get("files")
    entry = files.filter(pl.col("path").str.ends_with(mutant.name)) if files is not None else None
    if entry is None or entry.height != 1:
        return [f"{mutant.describe()}: not listed once in files"]
    status, error = entry["status"][0], entry["error"][0] or ""
    if status not in ("ok", "partial", "error", "skipped"):
        problems.append(f"status {status!r}")
    if "could not read this" in error or "Traceback" in error or "ROOFREPORT_DEBUG" in error:
        problems.append(f"internal error: {error[:300]}")
    if status in ("error", "partial") and mutant.name not in error:
        problems.append(f"error does not name the file: {error[:200]}")
    problems += _lost_under_ok(mutant, entry, tables)
    got, want = _rows(tables, mutant.name), _rows(originals, mutant.original)
    was = originals["files"].filter(pl.col("path").str.ends_with(mutant.original))["status"].to_list()
    if mutant.kind == "crlf":
        if [status] != was:
            problems.append(f"a valid log read as {status}, the original as {was}: {error[:200]}")
        for table in set(got) | set(want):
            if Counter(row for _, row in got.get(table, [])) != Counter(row for _, row in want.get(table, [])):
                problems.append(f"{table}: rows differ from the original's")
    elif mutant.kind == "header twice" and mutant.damage_line is not None:
        if [status] != was:
            problems.append(f"a valid log read as {status}, the original as {was}: {error[:200]}")
        problems += _kept_before(got, want, 10**12, shift_after=mutant.damage_line)
    elif mutant.damage_line is not None:
        problems += _kept_before(got, want, mutant.damage_line)
    return [f"{mutant.describe()}: {problem}" for problem in problems]


def _lost_under_ok(mutant: Mutant, entry: pl.DataFrame, tables: dict[str, pl.DataFrame]) -> list[str]:
    """A CSV mutant read "ok" lost no row (issue #34): its data rows, counted with `csv`
    (`norowlost.data_rows`), are the lines that gave rows (a row left out makes it partial)."""
    if entry["status"][0] != "ok" or mutant.source.suffix.lower() != ".csv" \
            or (entry["variant"][0] or "").endswith(norowlost.FOLDED):
        return []
    rows_in = norowlost.data_rows(mutant.data)
    rows_out = norowlost.rows_out(tables, mutant.name)
    if rows_in != rows_out:
        return [f"status ok but {rows_in} data rows in, {rows_out} read: rows lost in silence"]
    return []


def _kept_before(got: dict, want: dict, damage_line: int, shift_after: int | None = None) -> list[str]:
    """Every record the original holds that ends before `damage_line` (it runs to the line
    before its table's next row) is in the mutant, on the same line (after `shift_after`, a
    line later: one was inserted there), with the same values. A row of no one line (a whole
    trace's) is no record before the damage."""
    problems = []
    for table, rows in want.items():
        starts = sorted({line for line, _ in rows if line is not None})
        complete = {start for start, after in zip(starts, starts[1:] + [None])
                    if after is not None and after - 1 < damage_line}
        moved = (lambda line: line + 1 if shift_after is not None and line >= shift_after else line)
        before = Counter((moved(line), row[1:]) for line, row in rows if line in complete)
        kept = Counter((line, row[1:]) for line, row in got.get(table, []))
        lost = before - kept
        if lost:
            problems.append(f"{table}: {sum(lost.values())} rows of records complete before line "
                            f"{damage_line} lost or changed, e.g. {next(iter(lost))}"[:400])
    return problems


def _failed(code: int, output: str) -> bool:
    """The whole command failed: an exit code other than 0 or 1, a traceback, or the CLI's
    word for an internal error (exit code 1, and no file's outcome: the read stopped)."""
    return code not in (0, 1) or "Traceback" in output or "roofreport defect" in output


@dataclass
class Run:
    """One fuzzing run: the files, their mutants, and every problem found."""

    seed: int
    files: list[Path]
    mutants: list[Mutant]
    problems: list[str]

    def summary(self) -> str:
        return (f"seed {self.seed}: {len(self.mutants)} mutants of {len(self.files)} corpus files "
                f"({len({f.parent for f in self.files})} folders)")


def run(work: Path, seed: int, per_file: int, per_reader: int = 2) -> Run:
    """Mutants of the corpus files made in `work`, read with the originals, and checked."""
    files = corpus_files(per_reader)
    made = mutants(files, seed, per_file)
    originals, damaged = work / "originals", work / "mutants"
    originals.mkdir()
    damaged.mkdir()
    for number, source in enumerate(files):
        (originals / original_name(number, source)).write_bytes(source.read_bytes())
    for mutant in made:
        (damaged / mutant.name).write_bytes(mutant.data)
    problems = []
    code, output, before = parse_folder(originals, work / "out-originals")
    if _failed(code, output):
        problems.append(f"the originals: exit code {code}: {output[:300]}")
    code, output, after = parse_folder(damaged, work / "out-mutants")
    if _failed(code, output):
        problems.append(f"the mutants: exit code {code}: {output[:300]}")
    problems += [problem for mutant in made for problem in check(mutant, after, before)]
    return Run(seed, files, made, problems)
