"""The fixed cost of every run (issue 6): grammars come from the shipped cache, structural lines
are parsed without building Lark's Earley parser, sniffing stays cheap, the CLI imports no
report machinery, and a clean log is checked in chunks without being held.

Every shortcut here must give what the slow path gives: the cache what GrammarBuilder builds,
the regex-walked trees what Lark builds (checked on every structural line of the corpus).
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from functools import cache

import polars as pl
import pytest
from lark import Token, Tree

from roofreport import grammar
from roofreport.errors import ParseError
from roofreport.families.common.textio import (
    Document,
    _as_is,
    _first_invalid_utf8,
    read_head,
)
from roofreport.grammar import rule_cache as grammar_cache
from tests.conftest import ROOT, SAMPLE_LOGS, corpus_path

GRAMMARS = ["ncu", "nsys", "nvprof", "smi"]

# The rules the format modules ask `Grammar.parse` for a tree of (headers, table rules).
TREE_RULES = [
    ("ncu", "csv_header_line"), ("ncu", "table_rule_line"), ("ncu", "raw_rule_line"),
    ("nsys", "csv_header_line"), ("nsys", "rule_line"), ("nsys", "header_line"),
    ("nvprof", "csv_header_line"),
    ("smi", "query_header_line"), ("smi", "monitor_header_line"),
]


# -- the shipped grammar cache ----------------------------------------------------------------

@pytest.mark.parametrize("name", GRAMMARS)
def test_the_shipped_grammar_cache_is_fresh(name):
    assert grammar_cache.read(name) is not None, (
        f"roofreport/data/grammar_cache.json is stale for {name}.lark: "
        "run `python -m roofreport.grammar` and commit the file")


def test_the_cache_is_keyed_on_the_installed_lark_version(monkeypatch):
    """Another Lark (an upgrade) never reads the shipped cache: the grammar is built from its
    source instead, slower but never stale."""
    from importlib.metadata import version

    assert grammar_cache.lark_version() == version("lark")
    shipped = grammar_cache.key("ncu")
    monkeypatch.setattr(grammar_cache, "lark_version", lambda: "99.0.0")
    assert grammar_cache.key("ncu") != shipped
    assert grammar_cache.read("ncu") is None


@pytest.mark.parametrize("name", GRAMMARS)
def test_the_cache_holds_what_lark_builds(name):
    cached = grammar_cache.read(name)
    built = grammar.build_parts(name, grammar.source(name))
    assert cached.starts == built.starts and cached.trees == built.trees
    assert cached.terms == built.terms and cached.literals == built.literals
    for rule, options in built.options.items():
        got = cached.options[rule]
        assert (got.keep_all_tokens, got.expand1, got.priority, got.template_source) == \
            (options.keep_all_tokens, options.expand1, options.priority, options.template_source)
    # the same regexes either way
    fresh = grammar.Grammar(name, grammar.source(name), built)
    for rule in ["line", *fresh.rules[:10]]:
        try:
            assert grammar.load(name).regex(rule) == fresh.regex(rule)
        except ValueError:
            continue  # recursive rule


@pytest.mark.parametrize("name", GRAMMARS)
def test_the_groups_read_off_a_rule_regex_are_the_ones_re_compiles(name):
    g = grammar.load(name)
    checked = 0
    for rule in g.rules:
        try:
            rx = g.regex(rule)
        except ValueError:
            continue  # recursive rule
        assert g._capture_groups(rule) == list(re.compile(rx).groupindex), rule
        checked += 1
    assert checked > 10


# -- parse trees without an Earley parser -----------------------------------------------------

def _tokens(tree: Tree) -> list[tuple]:
    return [(t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos)
            for t in tree.scan_values(lambda v: isinstance(v, Token))]


def _same_tree(fast: Tree, slow: Tree) -> bool:
    return fast == slow and _tokens(fast) == _tokens(slow) and \
        [t.data for t in fast.iter_subtrees()] == [t.data for t in slow.iter_subtrees()]


@cache
def _corpus_lines() -> pl.Series:
    """Every distinct text line (up to 30 000 characters) of the corpus and the sample logs."""
    found: set[str] = set()
    for root in (corpus_path(), SAMPLE_LOGS):
        for path in sorted(root.rglob("*")):
            if path.is_file() and not read_head(path).binary:
                text = path.read_bytes()[:2_000_000].decode("utf-8", errors="replace")
                found.update(line for line in text.split("\n") if len(line) <= 30_000)
    control = re.compile("[\x00-\x08\x0a-\x1f]")  # where Python's and Rust's \s differ
    return pl.Series(sorted(line for line in found if not control.search(line)))


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "rule"), TREE_RULES)
def test_walked_trees_are_larks_on_every_structural_line_of_the_corpus(name, rule):
    g = grammar.load(name)
    lines = _corpus_lines()
    found = lines.filter(lines.str.contains(g.regex(rule))).to_list()
    assert found, f"no {rule} line in the corpus"
    # the shortest and the longest lines, and a spread between (Earley crawls over 4 KB,
    # except on the ncu raw-page headers of ~20 KB it must read)
    limit = 30_000 if (name, rule) == ("ncu", "csv_header_line") else 4096
    by_length = sorted((line for line in found if len(line) <= limit), key=len)
    for line in by_length[:25] + by_length[-5:] + by_length[25:-5:max(1, len(by_length) // 25)]:
        fast = g._trees.tree(line, rule)
        assert fast is not None, line
        assert _same_tree(fast, g._lark.parse(line, start=rule)), line


@pytest.mark.corpus
@pytest.mark.parametrize("name", GRAMMARS)
def test_classifying_in_passes_gives_the_kinds_of_the_one_expression(name):
    """`classify_lines` runs `classify` on a few lines and its own passes on many: same kinds."""
    lines = _corpus_lines()
    lines = lines.sample(n=min(len(lines), 60_000), seed=1)
    assert len(lines) > grammar._FEW_LINES
    g = grammar.load(name)
    kinds = g.classify_lines(lines)
    assert kinds.to_list() == pl.select(g.classify(pl.lit(lines))).to_series().to_list()
    assert kinds.value_counts().height > 3  # the sample holds several kinds of this family
    assert g.classify_lines(lines.head(50)).to_list() == kinds.head(50).to_list()


@pytest.mark.corpus
@pytest.mark.parametrize("name", [*GRAMMARS, "dcgm", "tegrastats"])
def test_one_line_is_classified_as_polars_classifies_it(name):
    """`classify_line` (Python's `re`, what the sniffers use on a head) gives every line the
    kind `classify_lines` (polars) gives it."""
    lines = _corpus_lines()
    g = grammar.load(name)
    # the sample and a few lines of every kind (a random sample can miss a rare one: tegrastats'
    # blank lines are 13 of the corpus and sample logs' 260 000)
    every = pl.DataFrame({"line": lines, "kind": g.classify_lines(lines)})
    few_of_each = every.group_by("kind", maintain_order=True).head(5)["line"]
    lines = pl.concat([lines.sample(n=min(len(lines), 20_000), seed=2), few_of_each]).unique(maintain_order=True)
    kinds = g.classify_lines(lines)
    assert [g.classify_line(line) for line in lines] == kinds.to_list()
    assert kinds.n_unique() >= 3  # the sample holds several kinds of this family
    assert g.pattern("blank_line") is g.pattern("blank_line")


def test_a_header_tree_has_lark_positions():
    tree = grammar.load("nvprof").parse('"Start","Duration",Name', "csv_header_line")
    names = [t for t in tree.scan_values(lambda v: isinstance(v, Token)) if t.type in ("CSV_NAME", "BARE_CSV_NAME")]
    assert [str(t) for t in names] == ["Start", "Duration", "Name"]
    assert [(t.column, t.end_column, t.start_pos, t.end_pos) for t in names] == \
        [(2, 7, 1, 6), (10, 18, 9, 17), (20, 24, 19, 23)]
    assert [t.data for t in tree.children if isinstance(t, Tree)] == ["csv_field"] * 3


def test_an_ambiguous_line_gets_the_split_extract_makes():
    """`Start  Duration  Name` fits `table_like` several ways (the last cell, or its tail as REST);
    the tree is the rule regex's split, the one `Grammar.extract` gives on the fast path."""
    g = grammar.load("nvprof")
    line = "   Start  Duration  Name"
    tree = g.parse(line, "table_like")
    assert [str(t) for t in tree.children] == ["Start", "Duration", "Name"]
    fields = re.match(g.regex("table_like"), line).groupdict()
    assert fields["cell_text_3"] == "Name" and fields["rest"] is None


def test_a_line_needing_backtracking_is_walked_with_look_ahead():
    # TITLE is lazy (`\S.*?`): alone it matches one character, the rest of the rule decides
    tree = grammar.load("nsys").parse(" ** CUDA GPU (Kernel) Summary (cuda_gpu_kern_sum):", "title_line")
    assert [(t.type, str(t)) for t in tree.children] == \
        [("TITLE", "CUDA GPU (Kernel) Summary"), ("REPORT_ID", "cuda_gpu_kern_sum")]


def test_a_bad_line_is_still_explained_by_lark():
    g = grammar.load("nvprof")
    with pytest.raises(ParseError) as info:
        g.parse('"Start",1234,Name', "csv_header_line", path="x.csv", line=3)
    assert (info.value.path, info.value.line, info.value.column) == ("x.csv", 3, 9)
    assert not g.matches('"Start",1234', "csv_header_line")
    assert g.matches('"Start","Unified Memory"', "csv_header_line")   # any names


_NO_EARLEY = """
import sys
from pathlib import Path
from roofreport import grammar
from roofreport.pipeline.ingest import parse_file
from roofreport.pipeline.sniff import sniff
for arg in sys.argv[1:]:
    s = sniff(Path(arg))
    assert s.readable, arg
    parse_file(Path(arg), s.spec.name, s.variant, arg)
print(sorted(n for n in ("ncu", "nsys", "nvprof", "smi") if "_lark" in vars(grammar.load(n))))
"""


@pytest.mark.corpus
def test_sniffing_and_parsing_clean_logs_builds_no_earley_parser():
    files = [corpus_path("nvprof", "trace", "matrixmul_v100_4streams_gpu_trace_interleaved_stdout.out"),
             corpus_path("ncu", "csv", "cc89_max_rate_metrics_na_values.csv"),
             corpus_path("nsys", "csv", "nvfuser_a100_gputrace_2022_None_literals.csv"),
             corpus_path("smi", "dmon", "samisena__MyBiome__gpu_usage.txt")]
    files += sorted(corpus_path("nvprof", "csv").glob("*.csv*"))[:3]
    out = subprocess.run([sys.executable, "-c", _NO_EARLEY, *map(str, files)], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- imports ---------------------------------------------------------------------------------

# `roofreport parse FILE -o DIR` in a fresh interpreter; prints the modules it loaded.
_PARSE_AND_LIST_MODULES = """
import sys
from roofreport.cli import main
sys.argv = ["roofreport", "parse", sys.argv[1], "-o", sys.argv[2], "--quiet"]
try:
    main()
except SystemExit as exc:
    assert exc.code == 0, exc.code
print(" ".join(sorted(sys.modules)))
"""


def _modules_loaded_parsing(path, tmp_path) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PARSE_AND_LIST_MODULES, str(path), str(tmp_path / "out")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "out" / "kernels.parquet").is_file()
    return set(out.stdout.split())


@pytest.mark.corpus
def test_parsing_an_nsys_csv_loads_no_other_familys_reader_and_no_report_machinery(tmp_path):
    """Every file is sniffed by every family in turn, so the family modules (`ncu`, `nvprof`,
    `smi`: sniffing only) and nvprof's line classifier its sniff uses are loaded; their readers
    are imported when a file of theirs is parsed."""
    loaded = _modules_loaded_parsing(
        corpus_path("nsys", "csv", "nvfuser_a100_gputrace_2022_None_literals.csv"), tmp_path)
    assert "roofreport.families.nsys.csv" in loaded  # (the file was read by its reader)
    others = {m for m in loaded if re.fullmatch(r"roofreport\.families\.(ncu|nvprof|smi)(\.\w+)?", m)}
    assert others <= {"roofreport.families.ncu", "roofreport.families.nvprof", "roofreport.families.smi",
                      "roofreport.families.nvprof.lines"}, sorted(others)
    assert {"roofreport.families.ncu", "roofreport.families.nvprof"} <= others  # (they sniffed it)
    assert not {m.split(".")[0] for m in loaded} & {"matplotlib", "weasyprint", "jinja2"}
    assert "roofreport.report" not in loaded


def test_a_log_whose_lines_the_regexes_read_imports_no_lark(tmp_path):
    """An nvprof summary log needs no parse tree (no CSV header, no table rule): Lark, ~10 ms
    to import, stays out (the grammar's rule trees are rule_cache's own nodes)."""
    loaded = _modules_loaded_parsing(SAMPLE_LOGS / "k80_sweep" / "out.resnet18_64_0.01_k80_full.812133",
                                     tmp_path)
    assert "roofreport.families.nvprof.text" in loaded or "roofreport.families.nvprof.fast" in loaded
    assert "lark" not in loaded
    assert not {m for m in loaded if re.fullmatch(r"roofreport\.families\.(ncu|nsys|smi)\.\w+", m)}


def test_a_reader_is_imported_on_its_first_call():
    from roofreport.families.spec import DeferredReader

    join = DeferredReader("os.path", "join")
    assert join("a", "b") == "a/b" and join._target is not None
    assert repr(join) == "DeferredReader(os.path.join)"
    with pytest.raises(ModuleNotFoundError):
        DeferredReader("roofreport.families.no_such_reader", "parse")(None, "")


def test_the_shipped_category_rules_read_at_start_up_are_the_checked_ones():
    from roofreport.enrich import categories

    assert categories.default_rules() == categories.load_rules(categories._DEFAULT)
    assert categories.CATEGORIES is categories.default_rules() and len(categories.CATEGORIES) > 5


def test_the_cli_imports_no_report_machinery():
    probe = ("import sys, roofreport.cli; print(sorted({m.split('.')[0] for m in sys.modules} & "
             "{'matplotlib', 'weasyprint', 'jinja2', 'numpy', 'pyarrow', 'pandas'}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- checking a clean file in chunks ---------------------------------------------------------

@pytest.mark.parametrize("data", [
    b"", b"plain\n", "µs °C café\n".encode(), "x€y".encode() * 7, b"a\rb", b"a\0b", b"a\x1fb",
    b"caf\xc3", b"caf\xc3\xa9", b"\xb5s", "ab€".encode() + b"\xff", "€".encode()[:2] + b"abc",
])
@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 1 << 20])
def test_a_file_is_taken_as_it_is_only_when_it_needs_no_repair(data, chunk):
    expected = (b"\r" not in data and b"\0" not in data and b"\x1f" not in data
                and _first_invalid_utf8(data) is None)
    assert _as_is(io.BytesIO(data), chunk) == expected


def test_a_clean_file_is_not_held_and_a_damaged_one_is_repaired_whole(tmp_path):
    clean, damaged = tmp_path / "clean.txt", tmp_path / "damaged.txt"
    clean.write_bytes("kernel µs\n".encode() * 1000)
    damaged.write_bytes(b"one\n" * 1000 + b"kernel \xb5s\n")
    doc = Document.open(clean)
    assert doc._data is None and doc.warnings == [] and doc.line_count() == 1000
    doc = Document.open(damaged)
    assert doc._data.endswith("kernel µs\n".encode())
    assert [(w.code, w.line) for w in doc.warnings] == [("input.not-utf8", 1001)]


# -- tokens without a tree --------------------------------------------------------------------

@pytest.mark.corpus
@pytest.mark.parametrize(("name", "rule"), TREE_RULES)
def test_the_tokens_of_a_line_are_the_ones_of_its_lark_tree(name, rule):
    """`Grammar.tokens` (no Lark) gives the named tokens `parse(...).scan_values` gives."""
    g = grammar.load(name)
    lines = _corpus_lines()
    found = lines.filter(lines.str.contains(g.regex(rule))).to_list()
    for line in sorted(found, key=len)[:30]:
        tokens = g.tokens(line, rule)
        tree = g._lark.parse(line, start=rule)
        expected = [(t.type, str(t)) for t in tree.scan_values(lambda v: isinstance(v, Token))]
        assert [(t.type, str(t)) for t in tokens] == expected, line


def test_tokens_of_a_line_lark_must_read_or_reject():
    g = grammar.load("nvprof")
    assert [(t.type, str(t)) for t in g.tokens('"Start","Duration",Name', "csv_header_line")] == \
        [("CSV_NAME", "Start"), ("CSV_SEP", ","), ("CSV_NAME", "Duration"), ("CSV_SEP", ","),
         ("BARE_CSV_NAME", "Name")]
    with pytest.raises(ParseError) as info:
        g.tokens('"Start",1234,Name', "csv_header_line", path="x.csv", line=3)
    assert (info.value.path, info.value.line, info.value.column) == ("x.csv", 3, 9)
