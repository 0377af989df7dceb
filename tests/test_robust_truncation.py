"""Truncation anywhere (issue 7): a log cut at any byte keeps every complete record before the
cut, unchanged, and nothing but roofreport's own errors comes out.

Logs are cut by job time limits mid-line, mid-table, mid-character. A hypothesis property test
cuts real corpus files (a few small files of every family, picked by glob) at random offsets
and checks, for every family whose parser is in the tree:

* `spec.parse(Document)` raises nothing but roofreport's own errors (RoofreportError), and
  `ingest.parse_file` (the pipeline's containment) raises nothing at all;
* no table of the cut file has more rows than the whole file's;
* every row on a complete line (before the cut) equals the whole file's row from the same
  `source_line`, and every row of the whole file before the cut is still there: nothing parsed
  is lost or changed. Only the line the cut went through may differ; no row comes after it.

The helpers here (corpus sampling, row comparison) are also used by test_robust_mutation.py.
"""

from __future__ import annotations

import math
import os
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from roofreport import families as formats
from roofreport.errors import RoofreportError
from roofreport.families.common.textio import (
    HEAD_BYTES,
    Document,
    detect_encoding,
    to_utf8,
)
from roofreport.families.spec import ParseResult
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
from tests.conftest import CORPUS

# Family -> (module under roofreport/families, corpus folders holding that family's logs).
FAMILIES = {
    "ncu": ("ncu", ("ncu", "derived/ncu")),
    "nsys": ("nsys", ("nsys", "derived/nsys")),
    "nvprof": ("nvprof", ("nvprof", "derived/nvprof")),
    "nvidia-smi": ("smi", ("smi",)),
}
MAX_BYTES = 200 * 1024
FILES_PER_FAMILY = 8
NOT_LOGS = {"MANIFEST.tsv", "README.md"}

# Modest, reproducible example counts: the whole suite must stay fast on 2 cores. No shrinking:
# a failure is shown as first found (the message says what was cut or damaged), because
# shrinking a parser defect costs minutes of CI per family.
# ROOFREPORT_ROBUST_EXAMPLES=500 explores further on a developer's machine.
ROBUST_SETTINGS = settings(
    max_examples=int(os.environ.get("ROOFREPORT_ROBUST_EXAMPLES", "40")), deadline=None, derandomize=True, database=None, print_blob=True,
    phases=(Phase.explicit, Phase.generate), report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)


@dataclass(frozen=True)
class Sample:
    """One real corpus file, as the pipeline sniffs and parses it whole."""

    path: Path
    spec_name: str
    variant: str

    @property
    def spec(self) -> formats.FormatSpec:
        return next(s for s in formats.REGISTRY if s.name == self.spec_name)

    @property
    def rel(self) -> str:
        return self.path.relative_to(CORPUS).as_posix()


def family_specs(family: str) -> list[formats.FormatSpec]:
    module = getattr(formats, FAMILIES[family][0])
    return [*getattr(module, "BINARY_SPECS", []), *getattr(module, "SPECS", [])]


@lru_cache(maxsize=None)
def family_samples(family: str) -> tuple[Sample, ...]:
    """Small corpus files of one family that sniff as one of its specs, one per variant first
    (so every layout is cut), up to FILES_PER_FAMILY, in a stable order."""
    names = {s.name for s in family_specs(family)}
    by_variant: dict[tuple[str, str], list[Sample]] = {}
    for folder in FAMILIES[family][1]:
        for path in sorted((CORPUS / folder).rglob("*")):
            if not path.is_file() or path.name in NOT_LOGS or path.stat().st_size > MAX_BYTES:
                continue
            sn = sniff(path)
            if sn.spec is not None and sn.spec.name in names:
                key = (sn.spec.name, sn.variant)
                by_variant.setdefault(key, []).append(Sample(path, sn.spec.name, sn.variant))
    picked: list[Sample] = []
    rounds = max((len(v) for v in by_variant.values()), default=0)
    for i in range(rounds):  # round-robin over variants
        for key in sorted(by_variant):
            if i < len(by_variant[key]) and len(picked) < FILES_PER_FAMILY:
                picked.append(by_variant[key][i])
    return tuple(picked)


def samples_or_skip(family: str) -> tuple[Sample, ...]:
    if not CORPUS.is_dir():
        pytest.skip(f"real-log corpus not found at {CORPUS} (tests read it in place)")
    module = FAMILIES[family][0]
    if not family_specs(family):
        pytest.skip(f"no {family} parser in the tree yet (roofreport/families/{module}.py "
                    "lists no specs)")
    samples = family_samples(family)
    if not samples:
        pytest.skip(f"no {family} corpus file under {MAX_BYTES // 1024} KB sniffs as a "
                    f"{family} log")
    return samples


# -- parsing the way the pipeline does, and directly ------------------------------------------

def parse_raw(sample: Sample, path: Path, display: str) -> ParseResult | RoofreportError:
    """`spec.parse` called directly: roofreport's own error is an answer, anything else a
    defect reported with the traceback (the pipeline would hide it in the file's error)."""
    spec = sample.spec
    source = path if spec.binary else Document.open(path, display=display)
    try:
        return spec.parse(source, sample.variant)
    except RoofreportError as exc:
        return exc
    except (Exception, pl.exceptions.PanicException):  # noqa: BLE001 - show what escaped
        pytest.fail(f"{spec.name}.parse raised a raw exception on {display}:\n"
                    f"{traceback.format_exc()}")


def parse_contained(sample: Sample, path: Path, display: str) -> ParseResult:
    try:
        return parse_file(path, sample.spec_name, sample.variant, display)
    except (Exception, pl.exceptions.PanicException):  # noqa: BLE001
        pytest.fail(f"ingest.parse_file let an exception escape on {display}:\n"
                    f"{traceback.format_exc()}")


@lru_cache(maxsize=None)
def whole(sample: Sample) -> ParseResult:
    result = parse_raw(sample, sample.path, sample.rel)
    assert isinstance(result, ParseResult), f"{sample.rel}: whole file raised {result}"
    return result


def line_count(data: bytes, raw_head: bytes) -> int:
    """Line breaks in the normalised text of `data` (encoding judged on the original head)."""
    return to_utf8(data, detect_encoding(raw_head[:HEAD_BYTES])).count(b"\n")


# -- row comparison --------------------------------------------------------------------------

def _key(value):
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return value


def rows_by_line(result: ParseResult, table: str) -> list[tuple[int | None, tuple]]:
    frame = result.tables.get(table)
    if frame is None or not frame.height:
        return []
    lines = frame["source_line"].to_list()
    return [(line, tuple(_key(v) for v in row)) for line, row in zip(lines, frame.rows())]


def check_rows_kept(cut: ParseResult, full: ParseResult, complete_lines: int, where: str) -> None:
    """Nothing parsed is lost or changed by a cut.

    A row's record runs from its `source_line` to the line before the next row of its table in
    the whole file (an ncu kernel: header, NVTX lines, sections). Records that end before the
    cut must come out identical; the record the cut went through may be partial or absent; no
    row may appear after the cut or on a line where the whole file had none."""
    for table in sorted(set(cut.tables) | set(full.tables)):
        got, want = rows_by_line(cut, table), rows_by_line(full, table)
        assert len(got) <= len(want), f"{where}: {table} has {len(got)} rows, whole file {len(want)}"
        assert all(line is not None for line, _ in got), f"{where}: {table} rows without source_line"
        starts = sorted({line for line, _ in want})
        complete = {s for s, nxt in zip(starts, starts[1:] + [None])
                    if nxt is not None and nxt - 1 <= complete_lines}
        invented = sorted({line for line, _ in got} - set(starts) - {complete_lines + 1})
        assert not invented, f"{where}: {table} rows at lines {invented[:5]} where the whole " \
                             f"file has none (cut in line {complete_lines + 1})"
        beyond = [line for line, _ in got if line > complete_lines + 1]
        assert not beyond, f"{where}: {table} rows at lines {beyond[:5]} after the cut " \
                           f"(line {complete_lines + 1})"
        kept = Counter(row for line, row in got if line in complete)
        before = Counter(row for line, row in want if line in complete)
        changed, lost = kept - before, before - kept
        assert not changed, f"{where}: {table} rows of complete records changed by the cut: " \
                            f"{_show(changed)}"
        assert not lost, f"{where}: {table} rows of complete records lost by the cut: {_show(lost)}"


def _show(rows: Counter) -> str:
    return "; ".join(repr(r)[:300] for r in list(rows)[:3])


def cut_sample(sample: Sample, data: bytes, tmp: Path) -> Path:
    path = tmp / sample.path.name  # the same name: sniffing may look at the suffix
    path.write_bytes(data)
    return path


# -- the property ----------------------------------------------------------------------------

def _offsets(size: int, data: bytes) -> st.SearchStrategy[int]:
    """Anywhere, with extra weight on line starts (cut between records) and just after them."""
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return st.one_of(
        st.integers(0, size),
        st.tuples(st.sampled_from(starts), st.integers(0, 40)).map(lambda t: min(size, t[0] + t[1])),
    )


@pytest.mark.corpus
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_cut_log_keeps_every_complete_record_before_the_cut(family):
    samples = samples_or_skip(family)

    @ROBUST_SETTINGS
    @given(data=st.data())
    def cut_anywhere(data):
        sample = data.draw(st.sampled_from(samples), label="file")
        raw = sample.path.read_bytes()
        cut = data.draw(_offsets(len(raw), raw), label="cut at byte")
        where = f"{sample.rel} cut at byte {cut} of {len(raw)}"
        with tempfile.TemporaryDirectory() as tmp:
            path = cut_sample(sample, raw[:cut], Path(tmp))
            sn = sniff(path, display=where)
            # The pipeline parses with the variant it sniffs; a short head may not be
            # recognisable or may look like another kind: still no raw exception allowed.
            same_spec = sn.spec is not None and sn.spec.name == sample.spec_name
            as_sniffed = Sample(sample.path, sample.spec_name, sn.variant) if same_spec else sample
            direct = parse_raw(as_sniffed, path, where)
            contained = parse_contained(as_sniffed, path, where)
        if not same_spec:
            return
        complete = line_count(raw[:cut], raw)
        full = whole(sample)
        if isinstance(direct, ParseResult):
            check_rows_kept(direct, full, complete, where)
        check_rows_kept(contained, full, complete, where)

    cut_anywhere()
