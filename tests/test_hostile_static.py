"""Static guarantees about untrusted input (issue 7), checked on the package source.

* No code path that could run or unpickle input: no `eval(`, `exec(`, `pickle.load`,
  `marshal.load`, `yaml.load`, `os.system`, `shell=True`.
* No catastrophic backtracking: every Python `re` pattern written in the package (a literal in
  `re.compile/search/match/...`) and every terminal of every grammar (Lark matches terminals
  with Python `re`) is free of the shapes that make a backtracking engine exponential or
  polynomial on a long line: a repeated group whose body can end the way it starts
  (`(a+)+`, `(\\s*\\S+)*`), overlapping alternatives under a repeat (`(\\d|\\d\\d)*`), and two
  adjacent unbounded repeats of overlapping characters (`\\d+\\d+`, `.*.*`). Polars (Rust regex)
  runs the compiled line rules in linear time; these are the patterns it does not run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

try:  # Python 3.11+
    import re._constants as sre_c
    import re._parser as sre_parse
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as sre_c
    import sre_parse

from roofreport import grammar

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "roofreport"
GRAMMARS = ROOT / "grammars"

FORBIDDEN = {
    r"(?<![.\w])eval\(": "eval() runs text as code",
    r"(?<![.\w])exec\(": "exec() runs text as code",
    r"\bpickle\.loads?\(": "unpickling runs code from the data",
    r"\bmarshal\.loads?\(": "marshal loads code objects",
    r"\byaml\.(?:load|unsafe_load|full_load)\(": "YAML tags construct arbitrary objects",
    r"\bos\.system\(": "a shell command line",
    r"\bos\.popen\(": "a shell command line",
    r"shell\s*=\s*True": "a shell command line",
    r"\b__import__\(": "imports chosen at run time",
}


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _code_lines(path: Path):
    """(line number, code) with comments and docstrings ignored (they may name the things)."""
    text = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            docstrings.update(range(node.lineno, node.end_lineno + 1))
    for no, line in enumerate(text.splitlines(), 1):
        if no not in docstrings:
            yield no, line.split("#", 1)[0]


def test_no_code_execution_or_deserialisation_of_input_anywhere_in_the_package():
    found = [f"{path.relative_to(ROOT)}:{no}: {why}: {code.strip()}"
             for path in _sources() for no, code in _code_lines(path)
             for pattern, why in FORBIDDEN.items() if re.search(pattern, code)]
    assert not found, "\n".join(found)


def test_the_forbidden_list_finds_what_it_forbids():
    samples = ["x = eval(text)", "pickle.load(fh)", "yaml.load(s)", "os.system(cmd)",
               "subprocess.run(cmd, shell=True)", "exec(code)"]
    for code in samples:
        assert any(re.search(p, code) for p in FORBIDDEN), code
    assert not any(re.search(p, "ast.literal_eval(s); evaluate(x); pl.col(c).list.eval(e)")
                   for p in FORBIDDEN)


# -- backtracking ------------------------------------------------------------------------------

MAXREPEAT = sre_c.MAXREPEAT
ALL = frozenset(range(257))            # 256 stands for "any non-ASCII character"
DIGITS = frozenset(range(0x30, 0x3A))
SPACE = frozenset(b" \t\n\r\f\v")
WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") | {256}
CATEGORIES = {
    sre_c.CATEGORY_DIGIT: DIGITS, sre_c.CATEGORY_NOT_DIGIT: ALL - DIGITS,
    sre_c.CATEGORY_SPACE: SPACE, sre_c.CATEGORY_NOT_SPACE: ALL - SPACE,
    sre_c.CATEGORY_WORD: WORD, sre_c.CATEGORY_NOT_WORD: ALL - WORD,
}


def _chars(op, av) -> frozenset:
    """Characters one single-character item can match (over ASCII + a non-ASCII stand-in)."""
    if op is sre_c.LITERAL:
        return frozenset({av if av < 256 else 256})
    if op is sre_c.NOT_LITERAL:
        return ALL - {av if av < 256 else 256}
    if op is sre_c.ANY:
        return ALL - {0x0A}
    if op is sre_c.IN:
        out, negate = set(), False
        for sub_op, sub_av in av:
            if sub_op is sre_c.NEGATE:
                negate = True
            elif sub_op is sre_c.RANGE:
                lo, hi = sub_av
                out |= set(range(lo, min(hi, 255) + 1)) | ({256} if hi > 255 else set())
            elif sub_op is sre_c.CATEGORY:
                out |= CATEGORIES.get(sub_av, ALL)
            else:
                out |= _chars(sub_op, sub_av)
        return frozenset(ALL - out if negate else out)
    return ALL


def _first(seq) -> frozenset:
    """Characters a sequence can start with (stopping at the first item that must match)."""
    out = set()
    for op, av in seq:
        if op in (sre_c.AT,):
            continue
        f, nullable = _item_first(op, av)
        out |= f
        if not nullable:
            break
    return frozenset(out)


def _item_first(op, av) -> tuple[frozenset, bool]:
    if op is sre_c.SUBPATTERN:
        body = av[-1]
        return _first(body), _nullable(body)
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
        lo, _, body = av
        return _first(body), lo == 0 or _nullable(body)
    if op is sre_c.BRANCH:
        branches = av[1]
        return frozenset().union(*(_first(b) for b in branches)), any(_nullable(b) for b in branches)
    if op in (sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.AT):
        return frozenset(), True
    return _chars(op, av), False


def _nullable(seq) -> bool:
    return all(_item_first(op, av)[1] for op, av in seq)


def _unbounded(op, av) -> bool:
    return op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and av[1] == MAXREPEAT


def risks(pattern: str) -> list[str]:
    """Backtracking hazards in a Python regex (empty when it is safe)."""
    found: list[str] = []
    _walk(sre_parse.parse(pattern), found)
    return found


def _walk(seq, found: list[str]) -> None:
    items = list(seq)
    for i, (op, av) in enumerate(items):
        if _unbounded(op, av):
            body = list(av[2])
            _ambiguous_loop(body, _first(body), found)
            _adjacent(items, i, found)
        for child in _children(op, av):
            _walk(child, found)


def _ambiguous_loop(body, follow_end: frozenset, found: list[str]) -> None:
    """Inside a repeated body, a character that could either continue an inner repeat (or an
    optional part) or be the next thing (the rest of the body, or the next iteration) gives
    the engine two ways to split the same text: exponentially many on a long line."""
    for i, (op, av) in enumerate(body):
        rest = body[i + 1:]
        follow = _first(rest) | (follow_end if _nullable(rest) else frozenset())
        variable = (op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT) and av[0] < av[1]) or \
            (op is sre_c.BRANCH and any(_nullable(b) for b in av[1]))
        if variable and _item_first(op, av)[0] & follow:
            found.append("a repeated group can split the same text two ways (nested or "
                         "optional quantifiers that overlap what follows)")
        if op is sre_c.BRANCH and _overlap(av[1]):
            found.append("overlapping alternatives under a repeat")
        for child in _children(op, av):
            inner_end = follow | (_first(child) if _unbounded(op, av) else frozenset())
            _ambiguous_loop(list(child), inner_end, found)


def _adjacent(items, i: int, found: list[str]) -> None:
    """`A+ B* C+` with A and C overlapping and everything between nullable and overlapping."""
    chars = _first(items[i][1][2])
    for op, av in items[i + 1:]:
        f, nullable = _item_first(op, av)
        if _unbounded(op, av) and f & chars:
            found.append("two adjacent unbounded repeats of overlapping characters")
            return
        if not nullable or not f <= chars:
            return


def _overlap(branches) -> bool:
    firsts = [_first(b) for b in branches]
    return any(firsts[a] & firsts[b] for a in range(len(firsts)) for b in range(a + 1, len(firsts)))


def _children(op, av):
    if op is sre_c.SUBPATTERN:
        yield av[-1]
    elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
        yield av[2]
    elif op is sre_c.BRANCH:
        yield from av[1]
    elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
        yield av[1]


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\s*\S+)*$", r"(\d|\d\d)*x", r"\d+\d+x",
                                     r"(.*,)*x", r"^(\w+\s?)*$", r"(?:a|aa)*c"])
def test_the_checker_flags_known_catastrophic_patterns(pattern):
    assert risks(pattern), pattern


@pytest.mark.parametrize("pattern", [r"-+(?: +-+)*", r'"(?:[^"]|"")*"', r"\S+(?: \S+)*",
                                     r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?", r"^  \S.*, (?:Context \d+)",
                                     r"==(PROF|WARNING|ERROR)== ?(.*)$", r"\s*(\d+)\s*$"])
def test_the_checker_passes_linear_patterns(pattern):
    assert not risks(pattern), (pattern, risks(pattern))


_RE_CALLS = {"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"}


def _package_patterns() -> list[tuple[str, str]]:
    """Literal patterns passed to Python's `re` anywhere in the package."""
    out = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in _RE_CALLS and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "re" and node.args \
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                out.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.args[0].value))
    return out


def _grammar_terminals() -> list[tuple[str, str]]:
    out = []
    for path in sorted(GRAMMARS.glob("*.lark")):
        if path.stem == "common":
            continue  # imported by the others, checked through them
        g = grammar.load(path.stem)
        out += [(f"grammars/{path.name}:{name}", rx) for name, rx in sorted(g._terms.items())]
    return out


def test_python_regexes_in_the_package_cannot_backtrack_catastrophically():
    patterns = _package_patterns()
    assert len(patterns) > 5, "the scan found no re.* calls: is it still looking at the package?"
    bad = [f"{where}: {pattern!r}: {', '.join(sorted(set(risks(pattern))))}"
           for where, pattern in patterns if risks(pattern)]
    assert not bad, "\n".join(bad)


def test_grammar_terminals_cannot_backtrack_catastrophically():
    """Lark matches each terminal with Python `re` at every position it tries."""
    terminals = _grammar_terminals()
    assert terminals
    bad = [f"{where}: {pattern!r}: {', '.join(sorted(set(risks(pattern))))}"
           for where, pattern in terminals if risks(pattern)]
    assert not bad, "\n".join(bad)
