"""The Lark grammars under `grammars/` are the single definition of every log format.

Two ways to use one grammar, so the syntax is written once and never drifts:

* `Grammar.parse(text, rule)` gives Lark's parse tree of one line or one small block. It is used
  for the few distinct structural lines (CSV headers, table titles) and to explain a bad line
  with line, column and the expected tokens. A line the rule's regex matches is walked with the
  regexes of the rule's parts (`tree.py`: the same tree, no Earley parser to build); Lark
  itself (Earley, complete dynamic lexer) parses the rest and says what is wrong.
* `Grammar.regex(rule)` compiles the same rule's EBNF (sequences, alternatives, `?`, `[...]`,
  `*`, `+`, terminals, literals, sub-rules) into one anchored regular expression whose named
  groups are the rule's named terminals (lower-cased). Vectorised polars string operations
  apply it to millions of rows at hundreds of MB/s, where a whole-file Lark parse crawls at ~5.

Terminal patterns must stay within the regex dialect Python's `re` and polars (Rust `regex`)
share: no look-around, no back-references. A test compiles every rule of every grammar with both.

Lark itself is imported only when a parse tree is asked for, the Earley parser is needed or the
shipped cache is stale: the rule trees the regexes come from are the node classes of `rules.py`,
read from the shipped cache (`rule_cache.py`) or built from the source (`lark_build.py`).
"""

from __future__ import annotations

import re
from functools import cache, cached_property
from typing import TYPE_CHECKING

import polars as pl

from roofreport.errors import ParseError
from roofreport.grammar import rule_cache
from roofreport.grammar.lark_build import build_parts, source
from roofreport.grammar.rules import NonTerminal, Parts, Terminal, Token, Tree, node_regex
from roofreport.grammar.tree import TreeBuilder
from roofreport.resources import data_dir

if TYPE_CHECKING:
    import lark


# Lark's Earley parser with the complete dynamic lexer is super-linear in the length of a
# terminal's match (a 64 KB quoted CSV field takes ~25 s), so it only ever sees bounded text:
# real structural lines stay under ~41 KB (ncu raw CSV headers); a damaged or crafted line of
# megabytes is refused with a ParseError instead of hanging the parse.
MAX_LARK_CHARS = 64 * 1024

# The longest line Lark is asked to explain (`Grammar.explain`). A line that fails makes the
# Earley parser try every split before it gives up, and a reader explains up to 20 of them:
# real table rows are far shorter, and a longer broken line gets its reader's own account.
MAX_EXPLAINED_CHARS = 4096

# Up to this many lines (a sniffed head, a small log) `classify_lines` runs the one-expression
# `classify`: 3x faster there, while on big files the pass per alternative wins.
_FEW_LINES = 2000

# A named group opening in a compiled rule: literals are escaped (`\(\?P<`), so every match is
# a group (tests/test_startup.py checks the names against `re`'s groupindex on every rule).
_GROUP_NAME = re.compile(r"\(\?P<(\w+)>")


class Grammar:
    """One family's grammar: a Lark parser plus regexes compiled from its rules."""

    def __init__(self, name: str, text: str, parts: Parts | None = None):
        self.name = name
        self._text = text
        self._imports = [str(data_dir("grammars"))]
        parts = parts or build_parts(name, text)
        self._parts = parts
        self._starts = parts.starts
        self._rule_trees, self._rule_options, self._rule_params = parts.trees, parts.options, parts.params
        # Terminals of the grammar as written (lazy quantifiers kept), for the line regexes.
        self._terms = parts.terms
        # Terminals that are plain strings, for the literal gates of `classify`.
        self._term_literals = parts.literals
        self._regex_cache: dict[tuple[str, bool], str] = {}
        self._derived_cache: dict[tuple[str, str], object] = {}
        self._trees = TreeBuilder(parts, name)

    def _derived(self, kind: str, rule: str, make):
        """`make(rule)`, computed once per rule: classifying asks for the same rule facts
        (alternatives, gates) on every call, for every file."""
        key = (kind, rule)
        if key not in self._derived_cache:
            self._derived_cache[key] = make(rule)
        return self._derived_cache[key]

    @cached_property
    def _lark(self) -> lark.Lark:
        """The Earley parser, built on first use: the regex path needs only the rule trees and
        terminals, and building Lark costs ~0.2 s of CPU per grammar and process."""
        from lark import Lark

        return Lark(_greedy(self._text), parser="earley", lexer="dynamic_complete",
                    start=self._starts, import_paths=self._imports, propagate_positions=True,
                    maybe_placeholders=False)

    @property
    def rules(self) -> list[str]:
        return sorted(self._rule_trees)

    def terminal(self, name: str) -> str:
        """The regex of one terminal, as Lark compiled it."""
        return self._terms[name]

    def regex(self, rule: str, anchored: bool = True) -> str:
        """`rule` as one regular expression; named terminals become named groups."""
        key = (rule, anchored)
        if key not in self._regex_cache:
            seen: dict[str, int] = {}
            body = node_regex(self._parts, self.name, self._rule_trees[rule], seen, (rule,))
            self._regex_cache[key] = f"^(?:{body})$" if anchored else body
        return self._regex_cache[key]

    def groups(self, rule: str) -> list[str]:
        """Names of the fields of `regex(rule)`: capture groups with alternatives' `_2` merged."""
        names: list[str] = []
        for group in self._capture_groups(rule):
            base = _field(group)
            if base not in names:
                names.append(base)
        return names

    def _capture_groups(self, rule: str) -> list[str]:
        """The named groups of `regex(rule)` in order (its `groupindex`), read off the regex
        text: polars compiles the regex that extracts them, Python need not (a rule's regex
        costs 0.1-2 ms to compile with `re`)."""
        return self._derived("capture_groups", rule, lambda r: _GROUP_NAME.findall(self.regex(r)))

    def extract(self, text: pl.Expr, rule: str) -> list[pl.Expr]:
        """Polars expressions, one per field of `rule`, extracted from the string `text`.
        A terminal that occurs in several alternatives of the rule gives one field."""
        rx = self.regex(rule)
        groups = self._capture_groups(rule)
        struct = text.str.extract_groups(rx)
        out = []
        for name in self.groups(rule):
            parts = [struct.struct.field(g) for g in groups if _field(g) == name]
            out.append((pl.coalesce(parts) if len(parts) > 1 else parts[0]).alias(name))
        return out

    def fields(self, text: str | None, rule: str) -> dict[str, str | None]:
        """What `extract` gives for one string: each field of `rule` (None where the rule does
        not match or the field's group took no part). For the few lines a reader looks at one by
        one, where a polars query per line costs more: plain text (`is_plain`) by Python's `re`
        on the same regex, any other by polars."""
        if text is not None and not is_plain(text):
            return dict(zip(self.groups(rule), pl.select(self.extract(pl.lit(text, pl.String), rule)).row(0)))
        match = None if text is None else self.pattern(rule).match(text)
        out: dict[str, str | None] = dict.fromkeys(self.groups(rule))
        if match is not None:
            for group in self._capture_groups(rule):
                name = _field(group)
                if out[name] is None:   # (coalesced: the first alternative's group that took part)
                    out[name] = match.group(group)
        return out

    def alternatives(self, rule: str) -> list[str]:
        """The sub-rules of a rule written as `a | b | c` (e.g. the line kinds of a format)."""
        return list(self._derived("alternatives", rule, self._alternatives))

    def _alternatives(self, rule: str) -> list[str]:
        tree = self._rule_trees[rule]
        names = []
        for expansion in tree.children:
            (value,) = expansion.children
            (symbol,) = value.children
            names.append(symbol.name)
        return names

    def classify(self, text: pl.Expr, rule: str = "line", other: str = "other") -> pl.Expr:
        """The first alternative of `rule` each string matches, tried in the grammar's order."""
        kinds = self.alternatives(rule)
        # The chain picks small integer codes (a string chain copies a string column per
        # alternative); one lookup turns them into the kinds' names at the end.
        chain = pl.when(self._matches(text, kinds[0])).then(pl.lit(0, pl.UInt8))
        for code, kind in enumerate(kinds[1:], start=1):
            chain = chain.when(self._matches(text, kind)).then(pl.lit(code, pl.UInt8))
        codes = chain.otherwise(pl.lit(len(kinds), pl.UInt8))
        return codes.replace_strict(list(range(len(kinds) + 1)), [*kinds, other],
                                    return_dtype=pl.String)

    def pattern(self, rule: str) -> re.Pattern:
        """`regex(rule)` compiled by Python's `re`, once: to test or pick apart the few lines a
        sniffer looks at (polars runs the same regex over whole files)."""
        return self._derived("pattern", rule, lambda name: re.compile(self.regex(name)))

    def classify_line(self, line: str, rule: str = "line", other: str = "other") -> str:
        """The kind `classify` gives one string: the first alternative of `rule` it matches."""
        for kind, pattern, literal in self._derived("patterns", rule, self._alternative_patterns):
            if (literal is None or literal in line) and pattern.match(line):
                return kind
        return other

    def _alternative_patterns(self, rule: str) -> tuple[tuple[str, re.Pattern, str | None], ...]:
        """(kind, its compiled regex, the literal a line must hold first or None): the gate
        `_matches` puts before a rule that starts with no literal (nvidia-smi's `command_line`
        regex took a third of its sniffer's time on lines without `nvidia-smi`)."""
        out = []
        for kind in self.alternatives(rule):
            prefix, required = self.gate(kind)
            out.append((kind, self.pattern(kind), required if required and not prefix else None))
        return tuple(out)

    def classify_lines(self, text: pl.Series, rule: str = "line", other: str = "other") -> pl.Series:
        """The kinds `classify` gives, computed alternative by alternative on the lines still
        unclassified: each rule's regex runs only on lines passing its literal gates (prefix,
        required literals), so a big file's common line kind is not scanned by every regex
        before its own (ncu text: 640 k table rows were matched by 12 regexes each)."""
        if text.len() <= _FEW_LINES:  # one pass of all regexes costs less than the bookkeeping
            return pl.select(self.classify(pl.lit(text), rule, other)).to_series()
        kinds = self.alternatives(rule)
        codes = pl.repeat(len(kinds), text.len(), dtype=pl.UInt8, eager=True)
        pending = pl.DataFrame({"index": pl.int_range(0, text.len(), dtype=pl.UInt32, eager=True),
                                "text": text})
        one_line = not text.str.contains("\n", literal=True).any()
        for code, kind in enumerate(kinds):
            if not pending.height:
                break
            rx = _open_ended(self.regex(kind)) if one_line else self.regex(kind)
            pos, hit = self._hits(pending, kind, rx)
            if not hit.any():
                continue
            cand = pending["index"] if pos is None else pending["index"].gather(pos)
            codes.scatter(cand.filter(hit), code)
            drop = hit.arg_true() if pos is None else pos.filter(hit)
            pending = pending.filter(pl.repeat(True, pending.height, eager=True).scatter(drop, False))
        return codes.replace_strict(list(range(len(kinds) + 1)), [*kinds, other],
                                    return_dtype=pl.String)

    def _hits(self, pending: pl.DataFrame, kind: str, rx: str) -> tuple[pl.Series | None, pl.Series]:
        """(positions of the gated lines or None for all, whether each of them matches)."""
        gate = self._gate_expr(kind)
        if gate is None:
            return None, pending["text"].str.contains(rx).fill_null(False)
        mask = pending.select(gate.fill_null(False)).to_series()
        if mask.sum() * 2 > pending.height:  # most lines pass: gathering them costs more
            return None, (mask & pending["text"].str.contains(rx)).fill_null(False)
        pos = mask.arg_true()
        return pos, pending["text"].gather(pos).str.contains(rx).fill_null(False)

    def _gate_expr(self, rule: str) -> pl.Expr | None:
        """A cheap necessary condition for a line to match `rule` (None: no literal known)."""
        return self._derived("gate_expr", rule, self._make_gate_expr)

    def _make_gate_expr(self, rule: str) -> pl.Expr | None:
        text, conds = pl.col("text"), []
        prefix, _ = self.gate(rule)
        if prefix:
            conds.append(text.str.starts_with(prefix))
        needed = self.required_literals(rule)
        if needed and not any(literal in prefix for literal in needed):
            conds.append(text.str.contains(next(iter(needed)), literal=True) if len(needed) == 1
                         else text.str.contains_any(sorted(needed)))
        if not conds:
            return None
        return conds[0] if len(conds) == 1 else conds[0] & conds[1]

    def required_literals(self, rule: str) -> frozenset[str] | None:
        """Literals of which every match of `rule` holds at least one (None when unsure)."""
        return self._derived("required", rule, lambda r: self._required(self._rule_trees[r], (r,)))

    def _required(self, node, stack: tuple[str, ...]) -> frozenset[str] | None:
        if isinstance(node, Terminal):
            literal = self._term_literals.get(node.name) or _regex_prefix(self._terms[node.name])
            return frozenset([literal]) if literal else None
        if isinstance(node, NonTerminal):
            if node.name in stack:
                return None
            return self._required(self._rule_trees[node.name], stack + (node.name,))
        if isinstance(node, Token):
            literal, whole = self._leading(node)
            return frozenset([literal]) if literal and whole else None
        kind, kids = node.data, node.children
        if kind == "expansions":
            sets = [self._required(k, stack) for k in kids]
            return None if any(s is None for s in sets) else frozenset().union(*sets)
        if kind == "expansion":
            sets = [s for s in (self._required(k, stack) for k in kids) if s]
            return max(sets, key=lambda s: (min(map(len, s)), -len(s)), default=None)
        if kind in ("value", "literal", "alias"):
            return self._required(kids[0], stack)
        if kind == "expr" and kids[1] == "+":
            return self._required(kids[0], stack)
        return None

    def gate(self, rule: str) -> tuple[str, str]:
        """(prefix, literal) every line matching `rule` must start with / contain, derived from
        the rule itself (leading literals; the longest literal the rule's one sequence always
        holds); "" when the rule gives none."""
        return self._derived("gate", rule, self._gate)

    def _gate(self, rule: str) -> tuple[str, str]:
        tree = self._rule_trees[rule]
        if len(tree.children) != 1:  # alternatives: no single sequence to read literals from
            return "", ""
        items = tree.children[0].children
        prefix = ""
        for item in items:
            text, whole = self._leading(item)
            prefix += text
            if not whole:
                break
        required = max((self._leading(i)[0] for i in items if self._leading(i)[1]), key=len, default="")
        return prefix, required

    def _matches(self, text: pl.Expr, rule: str) -> pl.Expr:
        """`text` matches `rule`. A rule that starts with a literal fails fast in the regex
        engine already; one that does not (`.*?==PROF==`) runs its regex only on the lines
        holding its literal (null elsewhere, which `when` reads as false)."""
        prefix, required = self.gate(rule)
        if prefix or not required:
            return text.str.contains(self.regex(rule))
        gated = pl.when(text.str.contains(required, literal=True)).then(text)
        return gated.str.contains(self.regex(rule))

    def _leading(self, item) -> tuple[str, bool]:
        """(literal text `item` always starts with, whether that text is all of it)."""
        if isinstance(item, Tree) and item.data in ("value", "literal") and len(item.children) == 1:
            return self._leading(item.children[0])
        if isinstance(item, Terminal):
            if item.name in self._term_literals:
                return self._term_literals[item.name], True
            return _regex_prefix(self._terms[item.name]), False
        if isinstance(item, Token) and str(item).startswith('"'):
            body, _, flags = str(item)[1:].rpartition('"')
            if flags:
                return "", False
            return body.encode("latin-1", "backslashreplace").decode("unicode_escape"), True
        return "", False

    def parse(self, text: str, rule: str, path: str = "", line: int | None = None) -> lark.Tree:
        """Parse `text` with Lark as `rule`; a failure becomes a ParseError at file:line:column."""
        if len(text) > MAX_LARK_CHARS:
            raise ParseError(f"{self.name}: line is {len(text)} characters long; lines over "
                             f"{MAX_LARK_CHARS} characters are not parsed", path=path, line=line,
                             column=MAX_LARK_CHARS + 1, text=text[:MAX_LARK_CHARS + 1])
        tree = self._trees.tree(text, rule)  # a matching line needs no Earley parser
        if tree is not None:
            return tree
        from lark.exceptions import UnexpectedInput

        try:
            return self._lark.parse(text, start=rule)
        except UnexpectedInput as exc:
            raise self._error(exc, text, path, line) from None

    def tokens(self, text: str, rule: str, path: str = "", line: int | None = None) -> list[Token]:
        """The named tokens of `parse(text, rule)` in text order (`tree.scan_values` of every
        Token), each a str with its terminal's `.type`. A line the rule's regex walk reads
        needs no tree and no Lark (~10 ms to import): what a header's reader asks for."""
        if len(text) <= MAX_LARK_CHARS:
            found = self._trees.tokens(text, rule)
            if found is not None:
                return found
        tree = self.parse(text, rule, path, line)  # Lark parses it, or says what is wrong
        return [Token(t.type, str(t)) for t in tree.scan_values(lambda v: hasattr(v, "type"))]

    def explain(self, text: str, rule: str, path: str = "", line: int | None = None,
                otherwise: ParseError | None = None) -> ParseError | None:
        """Why `text` is not a `rule`: Lark's error at file:line:column with what it expected,
        for a line of up to `MAX_EXPLAINED_CHARS`; `otherwise` (the reader's own account: out
        of place, not fitting its table's columns) for a longer line or one that parses."""
        if len(text) <= MAX_EXPLAINED_CHARS:
            try:
                self.parse(text, rule, path=path, line=line)
            except ParseError as exc:
                return exc
        return otherwise

    def matches(self, text: str, rule: str) -> bool:
        if len(text) > MAX_LARK_CHARS:
            return False
        if self._trees.supported(rule):
            return self._trees.tree(text, rule) is not None
        from lark.exceptions import UnexpectedInput

        try:
            self._lark.parse(text, start=rule)
            return True
        except UnexpectedInput:
            return False

    # -- internals ---------------------------------------------------------------------------

    def _error(self, exc: lark.exceptions.UnexpectedInput, text: str, path: str,
               line: int | None) -> ParseError:
        from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

        col = getattr(exc, "column", None)
        if isinstance(exc, UnexpectedEOF) or col in (None, -1):
            col = len(text) + 1
        if isinstance(exc, UnexpectedCharacters):
            expected = sorted(exc.allowed or [])
            what = f"unexpected character {text[col - 1:col]!r}" if col <= len(text) else "unexpected end of line"
        elif isinstance(exc, UnexpectedToken):
            expected = sorted(exc.expected or [])
            what = f"unexpected {exc.token!r}"
        else:
            expected, what = [], "unexpected end of line"
        hint = f" (expected {', '.join(expected[:6])})" if expected else ""
        return ParseError(f"{self.name}: {what}{hint}", path=path, line=line, column=col, text=text)


def _open_ended(rx: str) -> str:
    """`^(...X.*)$` -> `^(...X)`: on text without line breaks a trailing `.*` matches whatever
    follows, so the engine need not scan the rest of every line. Only for regexes without
    alternatives (an earlier alternative would lose its end anchor)."""
    body = rx[:-1].rstrip(")") if rx.endswith("$") else ""
    if "|" in rx or not body.endswith(".*") or body.endswith("\\.*") or body.endswith("?.*"):
        return rx
    closing = len(rx) - 1 - len(body)
    return body[:-2] + ")" * closing


def _greedy(text: str) -> str:
    """Lazy quantifiers made greedy, for Lark only. A regex's language does not depend on
    laziness; only which split of a line a regex engine picks does. The complete dynamic Earley
    lexer tries every prefix of a terminal's match, so it needs the longest match to see them
    all, while the compiled line regexes keep `.*?` to prefer the shortest kernel name."""
    return re.sub(r"(?<!\\)([*+}])\?", r"\1", text)


def is_plain(text: str) -> bool:
    """`text` is printable ASCII and tabs only. On such text Python's `re` and polars' regex
    engine agree on every class the grammars use (`\\s`, `\\d`, `\\w`, case folding); beyond it
    they differ (Unicode digits, `\\x1c`-`\\x1f` as spaces)."""
    return _PLAIN.fullmatch(text) is not None


_PLAIN = re.compile(r"[\t\x20-\x7e]*")


def _field(group: str) -> str:
    """`device_2` -> `device`: the same terminal in another alternative of a rule."""
    base, _, suffix = group.rpartition("_")
    return base if base and suffix.isdigit() else group


def _regex_prefix(rx: str) -> str:
    """The literal text every match of the regex `rx` starts with ("" when unsure)."""
    if "|" in rx:
        return ""
    out = ""
    for index, ch in enumerate(rx):
        if ch in ".^$*+?{}[]()|\\":
            break
        after = rx[index + 1:index + 2]
        if after in ("*", "?", "{"):
            break
        out += ch
        if after == "+":
            break
    return out


@cache
def load(name: str) -> Grammar:
    """The grammar `grammars/<name>.lark`, made once per process from the shipped cache of its
    rule trees (`rule_cache.py`), or built from the source when that is stale."""
    return Grammar(name, source(name), rule_cache.read(name))


