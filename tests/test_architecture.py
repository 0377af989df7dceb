"""The architecture, checked: data flows one way (families -> tables -> analysis -> report, the CLI
over the API), no two modules import each other in a loop (imports inside functions included),
and every family is named after its grammar."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "roofreport"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("roofreport")


def test_the_import_linter_contracts_hold():
    """The layers, the leaf modules and the families' independence (pyproject.toml
    [tool.importlinter]); `lint-imports` reports the same."""
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_two_modules_import_each_other_in_a_loop(graph):
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_loop_check_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _families() -> list[str]:
    return sorted(p.name for p in (PACKAGE / "families").iterdir()
                  if (p / "__init__.py").is_file() and p.name != "common")


@pytest.mark.parametrize("family", _families())
def test_a_family_is_named_after_its_grammar(family):
    grammars = ROOT / "grammars"
    assert (grammars / f"{family}.lark").is_file() or (grammars / family).is_dir(), family


@pytest.mark.parametrize("family", _families())
def test_every_family_is_in_the_registry_and_independent(family):
    import tomllib

    from roofreport.families import REGISTRY

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    independent = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "independence")
    assert f"roofreport.families.{family}" in independent["modules"]
    assert any(spec.parse.__module__ == f"roofreport.families.{family}" or
               getattr(spec.parse, "module", "").startswith(f"roofreport.families.{family}.")
               for spec in REGISTRY), family


def test_no_two_classes_share_a_name_within_a_layer():
    """Three classes named `Lines` in one layer were hard to tell apart; a name says what it holds."""
    seen: dict[tuple[str, str], str] = {}
    clashes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = path.relative_to(PACKAGE).parts[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                key = (layer, node.name)
                if key in seen:
                    clashes.append(f"{node.name}: {seen[key]} and {path.relative_to(ROOT)}")
                seen.setdefault(key, str(path.relative_to(ROOT)))
    assert clashes == []


_INNER = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def _bound_names(node: ast.AST) -> list[ast.AST]:
    """The names `node` binds itself: arguments, assignment and loop targets, `as` names."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = node.args
        return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                *[extra for extra in (arguments.vararg, arguments.kwarg) if extra]]
    targets = {ast.Assign: lambda: node.targets, ast.AnnAssign: lambda: [node.target],
               ast.AugAssign: lambda: [node.target], ast.NamedExpr: lambda: [node.target],
               ast.For: lambda: [node.target], ast.AsyncFor: lambda: [node.target],
               ast.withitem: lambda: [node.optional_vars] if node.optional_vars else []}
    found = targets.get(type(node), list)()
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node]
    return [name for target in found for name in ast.walk(target) if isinstance(name, ast.Name)]


def _one_letter_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every one-letter name bound outside comprehensions and lambdas."""
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        for bound in _bound_names(node):
            name = getattr(bound, "id", None) or getattr(bound, "arg", None) or getattr(bound, "name", "")
            if len(name) == 1 and name != "_":
                found.append((bound.lineno, name))
        stack.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, _INNER))
    return sorted(found)


def _package_findings(check, kept: set[tuple[str, str]] = frozenset()) -> list[str]:
    """`path:line: name` for each (line, name) `check` finds in a module of the package, less
    the (path, name) pairs `kept` on purpose."""
    return [f"{path.relative_to(ROOT)}:{line}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
            for line, name in check(ast.parse(path.read_text(encoding="utf-8")))
            if (path.relative_to(ROOT).as_posix(), name) not in kept]


def test_no_one_letter_names_outside_comprehensions():
    """A name says what it holds (issue #14): `syntax` for a family's grammar, `index`, `row`,
    `match`; one letter only as a comprehension's or a lambda's own variable (and `_`)."""
    assert _package_findings(_one_letter_names) == []


def test_the_one_letter_check_sees_what_it_should():
    source = ("def f(a, _, *, b=1):\n    c = [d for d in a]\n    for e, _ in a: pass\n"
              "    g = lambda h: h\n    with open(a) as i: pass\n    try: pass\n"
              "    except OSError as j: pass\n    k += 1\n")
    assert [name for _, name in _one_letter_names(ast.parse(source))] == list("abcegijk")


# Single-letter columns kept on purpose: the sweep frames' `x` (with `x_label`, `x_order`) is a
# column of `analysis.sweeps.time_sweeps`' result, read outside the module; the row hashes'
# column `h` is hashed into `duplicates.tables_digest`, kept in every dataset's facts.
_KEPT_COLUMNS = {("roofreport/analysis/sweeps.py", "x"), ("roofreport/pipeline/duplicates.py", "h")}


def _called(node: ast.Call) -> str:
    return getattr(node.func, "attr", None) or getattr(node.func, "id", "")


def _one_letter_columns(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every one-letter string passed to `pl.col(...)` or `.alias(...)`, or used
    as a key of a dict literal given to `pl.DataFrame(...)`."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _called(node) in ("col", "alias"):
            literals = node.args
        elif _called(node) == "DataFrame":
            given = [*node.args[:1], *[keyword.value for keyword in node.keywords if keyword.arg == "data"]]
            literals = [key for data in given if isinstance(data, ast.Dict) for key in data.keys if key]
        else:
            continue
        found += [(literal.lineno, literal.value) for literal in literals
                  if isinstance(literal, ast.Constant) and isinstance(literal.value, str)
                  and len(literal.value) == 1 and literal.value.isalpha()]
    return sorted(found)


def test_no_one_letter_column_names():
    """A frame's column says what it holds (issue #14): `line_kind`, `metric_cell`, `count`,
    not `k`, `m`, `n`; internal frames included."""
    assert _package_findings(_one_letter_columns, kept=_KEPT_COLUMNS) == []


def test_the_one_letter_column_check_sees_what_it_should():
    source = ('pl.col("a", "b").alias("c")\nframe.select(pl.col("kind").alias("d"))\n'
              'pl.DataFrame({"e": [1], "text": [2]})\npl.DataFrame(data={"f": [1]})\n'
              'pl.DataFrame({**rows})\ncol("g")\npl.lit("h")\nframe["i"]\nrows.select(pl.col("1"))\n')
    assert [name for _, name in _one_letter_columns(ast.parse(source))] == list("abcdefg")
