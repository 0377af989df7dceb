"""Every grammar loads, and every rule compiles to a regex both Python and polars accept."""

from __future__ import annotations

import re

import polars as pl
import pytest

from roofreport import grammar
from roofreport.resources import data_dir

GRAMMARS = sorted(p.stem for p in data_dir("grammars").glob("*.lark") if p.stem != "common")


@pytest.mark.parametrize("name", GRAMMARS)
def test_every_rule_compiles_for_python_and_polars(name):
    g = grammar.load(name)
    assert g.rules, f"{name}.lark defines no rules"
    for rule in g.rules:
        try:
            rx = g.regex(rule)
        except ValueError:
            continue  # recursive rules are Lark-only by design
        re.compile(rx)
        pl.select(pl.lit("x").str.contains(rx))  # raises on a pattern Rust's regex rejects


def test_regex_and_lark_agree_on_a_kernel_header():
    g = grammar.load("ncu")
    line = "  rand_init(curandStateXORWOW *) (1, 1, 1)x(1, 1, 1), Context 1, Stream 7, Device 0, CC 7.5"
    fields = re.match(g.regex("kernel_line"), line).groupdict()
    assert fields["kernel_name"] == "rand_init(curandStateXORWOW *)"
    assert fields["grid"] == "(1, 1, 1)" and fields["cc"] == "7.5"
    tree = g.parse(line, "kernel_line")
    tokens = {t.type: str(t) for t in tree.scan_values(lambda v: hasattr(v, "type"))}
    assert tokens["KERNEL_NAME"] == fields["kernel_name"]


def test_parse_error_points_at_line_and_column():
    g = grammar.load("ncu")
    with pytest.raises(Exception) as info:
        g.parse("    dram__bytes.sum   Kbyte  7.90 x", "metric_row", path="log.txt", line=12)
    err = info.value
    assert (err.path, err.line, err.column) == ("log.txt", 12, 35)
    assert err.describe().splitlines()[-1].index("^") == 4 + 34


def test_extract_merges_a_terminal_from_several_alternatives():
    g = grammar.load("ncu")
    frame = pl.DataFrame({"t": ["  k(int) (1, 1, 1)x(256, 1, 1), Device 0, CC 8.9, Invocations 14",
                                "  k(int), 2023-Oct-29 22:17:35, Context 1, Stream 7, Device 3, CC 7.0"]})
    out = frame.select(g.extract(pl.col("t"), "kernel_line"))
    assert out["device"].to_list() == ["0", "3"]
    assert out["invocations"].to_list() == ["14", None]
