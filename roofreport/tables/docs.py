"""docs/tables.md, written from `schema.py`: every table, its columns, their types and meanings.

The schema module is the one definition: each table's comment block above its dict is the
table's description, each column's trailing comment its meaning, and comment lines inside a
dict notes on the columns after them. This module reads them from its source (tokenize and ast,
nothing imported twice), so the page cannot drift from the code; `tests/test_docs.py` checks
that docs/tables.md is what `python -m roofreport.tables.docs` prints (`make docs` writes it).
"""

from __future__ import annotations

import ast
import inspect
import io
import sys
import tokenize
from dataclasses import dataclass, field

import polars as pl

from roofreport.tables import schema

HEADER = ("<!-- Generated from roofreport/tables/schema.py by `make docs` "
          "(python -m roofreport.tables.docs): do not edit. -->")


@dataclass
class _Block:
    """One dict of schema.py: its description, its columns' comments, the dicts it spreads."""

    description: list[str] = field(default_factory=list)
    comments: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    spreads: list[str] = field(default_factory=list)


def markdown() -> str:
    """The page (see the module docstring)."""
    blocks, tables = _read_source(inspect.getsource(schema))
    out = [HEADER, "", "# The tables", "",
           *_first_paragraph(schema.__doc__ or ""), "",
           f"Schema version {schema.SCHEMA_VERSION}. `roofreport parse LOGS -o DIR` writes one file per table "
           "(`kernels.parquet`, ...); `roofreport.read(LOGS)` gives them as polars DataFrames "
           "(`data.kernels`, ...). Types are polars types; every column may be null (unknown).", ""]
    for name, columns in schema.TABLES.items():
        block = blocks.get(tables.get(name, ""), _Block())
        out += [f"## {name}", ""]
        if block.description:
            text = " ".join(block.description)
            text = text.removeprefix(f"{name}: ")
            out += [text[:1].upper() + text[1:], ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        for column, dtype in columns.items():
            meaning = _comment(column, block, blocks)
            out.append(f"| `{column}` | {_type(dtype)} | {meaning} |")
        out.append("")
        for note in block.notes:
            out += [note, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _first_paragraph(doc: str) -> list[str]:
    """The module docstring's second paragraph (units, nulls), without its notes on functions."""
    paragraphs = doc.strip().split("\n\n")
    if len(paragraphs) < 2:
        return []
    text = " ".join(line.strip() for line in paragraphs[1].splitlines())
    return [". ".join(s for s in text.split(". ") if "`empty(" not in s).rstrip(".") + "."]


def _type(dtype: pl.DataType) -> str:
    return "Datetime (µs)" if isinstance(dtype, pl.Datetime) else str(dtype)


def _comment(column: str, block: _Block, blocks: dict[str, _Block]) -> str:
    """The column's comment in its table's dict, else in a dict the table spreads (`**_SOURCE`)."""
    if column in block.comments:
        return block.comments[column].replace("|", "\\|")
    for spread in block.spreads:
        found = _comment(column, blocks.get(spread, _Block()), blocks)
        if found:
            return found
    return ""


def _read_source(source: str) -> tuple[dict[str, _Block], dict[str, str]]:
    """Per module-level dict assignment, its `_Block`; and TABLES' table name -> dict name."""
    comments = _comments_by_line(source)
    lines = source.splitlines()
    blocks: dict[str, _Block] = {}
    tables: dict[str, str] = {}
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if not isinstance(target, ast.Name) or not isinstance(node.value, ast.Dict):
            continue
        if target.id == "TABLES":
            tables = {k.value: v.id for k, v in zip(node.value.keys, node.value.values)
                      if isinstance(k, ast.Constant) and isinstance(v, ast.Name)}
            continue
        blocks[target.id] = _block(node, node.value, comments, lines)
    return blocks, tables


def _block(node: ast.stmt, value: ast.Dict, comments: dict[int, str], lines: list[str]) -> _Block:
    block = _Block()
    above = node.lineno - 1   # the comment block right above the assignment (1-based lines)
    while above >= 1 and lines[above - 1].lstrip().startswith("#"):
        block.description.insert(0, comments[above])
        above -= 1
    keyed = set()
    for key, item in zip(value.keys, value.values):
        if key is None and isinstance(item, ast.Name):
            block.spreads.append(item.id)
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            keyed.add(key.lineno)
            if key.lineno in comments and not lines[key.lineno - 1].lstrip().startswith("#"):
                block.comments[key.value] = comments[key.lineno]
    inside = [n for n in range(node.lineno + 1, (node.end_lineno or node.lineno))
              if n not in keyed and lines[n - 1].lstrip().startswith("#")]
    if inside:
        block.notes.append(" ".join(comments[n] for n in inside))
    return block


def _comments_by_line(source: str) -> dict[int, str]:
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string.lstrip("#").strip()
    return found


if __name__ == "__main__":
    sys.stdout.write(markdown())
