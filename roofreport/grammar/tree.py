"""Lark-shaped parse trees of lines a rule's regex matches, built without a Lark parser.

`Grammar.parse` is asked for the tree of a few structural lines per file (CSV headers, table
rules, column headers). Building Lark's Earley parser for that costs 0.1-0.2 s per grammar and
process, and Earley is super-linear in a line's length. A line the rule's compiled regex matches
needs no parser to find its derivation: walking the same rule tree the regex was compiled from
(sequences, alternatives, `?`, `[...]`, `*`, `+`, sub-rules, terminals, literals) and matching
each part with its own regex gives the tree Lark builds: named terminals as Tokens with Lark's
positions, sub-rules as Trees, `_rule`s inlined, a `?rule` with one child replaced by it, string
literals and `_TERMINALS` left out.

A line with one derivation (every header and table rule of the corpus: tests compare with Lark)
has the same tree either way. A line that fits a rule several ways (`    INF   text` for
`"    " ADVICE_TYPE _GAP REST?`) gets the split the rule's regex makes, the one
`Grammar.extract` gives, where Lark's Earley keeps the earlier tokens shortest (REST " text").

The walk first matches each part on its own (linear in the line, and right for the unambiguous
lines logs hold); when that gets stuck, it walks again with the rest of the rule as a look-ahead,
which follows the regex engine's own choices. Rules using what the walk does not model (aliases,
`!rule`, templates, `~` ranges, priorities, inline /regexp/ tokens, recursion) get None, as do
lines the regex does not match: Lark parses those and explains what is wrong.

The rule trees walked are the nodes of `rules.py`, read from the grammar's `Parts`. The walk
records its derivation in plain tuples (`_Leaf`, `_Node`); `tree` turns it into Lark's own
`Tree` and `Token` (Lark is imported with the first tree built), `tokens` into the named tokens
alone, which is all a header's reader wants (its column names) and needs no Lark.

Kept beside Lark, which gives the same trees (tests compare them on every header and rule line
of the corpus), because it earns more than 10 % on every small log with a header: `roofreport
parse` of a real nvidia-smi query CSV takes 0.34 s of CPU against 0.40 s with Lark parsing its
header (-15 %), of an nsys stats console log 0.35 against 0.42 s (-17 %), of a DCGM dmon log
0.28 against 0.35 s (best of 5, alternating, noisy shared machine).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from roofreport.grammar.rules import NonTerminal, Parts, Terminal, Token, node_regex

if TYPE_CHECKING:
    import lark


class _Stuck(Exception):
    """The walk cannot go on from here (this mode's choices were wrong, or Lark must decide)."""


class _Leaf(NamedTuple):
    """A named terminal matched at text[start:end] (a Token in Lark's tree)."""

    name: str
    start: int
    end: int


class _Node(NamedTuple):
    """A sub-rule kept in the tree (a Tree in Lark's)."""

    rule: str
    kids: list


class TreeBuilder:
    """Derivations of single lines for one grammar; compiled part patterns are cached."""

    def __init__(self, parts: Parts, grammar: str):
        self._parts, self._grammar = parts, grammar
        self._plain: dict[int, str] = {}          # id(node) -> regex without named groups
        self._patterns: dict[tuple[int, str | None], re.Pattern] = {}
        self._supported: dict[str, bool] = {}

    def tree(self, text: str, rule: str) -> lark.Tree | None:
        """Lark's tree of `text` as `rule`, or None when Lark must parse it (no match, or a
        rule the walk does not model)."""
        derivation = self._derive(text, rule)
        return None if derivation is None else _to_lark(derivation, text)

    def tokens(self, text: str, rule: str) -> list[Token] | None:
        """The named tokens of that tree in text order (what its `scan_values` yields), as
        `rules.Token`s, or None when Lark must parse the line."""
        derivation = self._derive(text, rule)
        if derivation is None:
            return None
        out: list[Token] = []
        _leaves(derivation, text, out)
        return out

    def _derive(self, text: str, rule: str) -> _Node | None:
        if not self.supported(rule):
            return None
        body = self._parts.trees[rule]
        for cont in (None, r"\Z"):  # parts on their own first, then with look-ahead
            if cont is not None and self._pattern(body, None).fullmatch(text) is None:
                return None  # Lark explains what is wrong
            kids: list = []
            try:
                end = self._walk(body, text, 0, cont, kids)
            except _Stuck:
                continue
            if end == len(text):
                return _Node(rule, kids)
        return None

    def supported(self, rule: str) -> bool:
        if rule not in self._supported:
            options = self._parts.options.get(rule)
            top = options is None or not (options.expand1 or rule.startswith("_"))
            self._supported[rule] = top and self._models(NonTerminal(rule), (), set())
        return self._supported[rule]

    # -- the walk ----------------------------------------------------------------------------

    def _walk(self, node, text: str, pos: int, cont: str | None, out: list) -> int:
        """Match `node` at `pos` (followed by `cont` to the end, when given), append what it
        puts in the tree to `out`, and return where it ends."""
        if isinstance(node, Terminal):
            end = self._end(node, text, pos, cont)
            if end == pos:  # Lark has no zero-width tokens
                raise _Stuck
            if not node.name.startswith("_"):
                out.append(_Leaf(node.name, pos, end))
            return end
        if isinstance(node, NonTerminal):
            kids: list = []
            end = self._walk(self._parts.trees[node.name], text, pos, cont, kids)
            out.extend(self._shape(node.name, kids))
            return end
        if isinstance(node, Token):  # a literal written in the rule: never in Lark's tree
            return self._end(node, text, pos, cont)
        kind, kids = node.data, node.children
        if kind in ("value", "literal"):
            return self._walk(kids[0], text, pos, cont, out)
        if kind == "expansion":
            for index, kid in enumerate(kids):
                rest = None if cont is None else "".join(self._regex(k) for k in kids[index + 1:]) + cont
                pos = self._walk(kid, text, pos, rest, out)
            return pos
        if kind == "expansions":
            for alt in kids:
                if self._fits(alt, text, pos, cont):
                    return self._walk(alt, text, pos, cont, out)
            raise _Stuck
        if kind == "maybe" or kids[1] == "?":
            return self._walk(kids[0], text, pos, cont, out) if self._fits(kids[0], text, pos, cont) else pos
        return self._repeat(kids[0], str(kids[1]), text, pos, cont, out)

    def _repeat(self, item, op: str, text: str, pos: int, cont: str | None, out: list) -> int:
        """`item*` / `item+`: as many items as fit (greedy, as the regex engine and Lark)."""
        loop = None if cont is None else f"(?:{self._regex(item)})*{cont}"
        count = 0
        while self._fits(item, text, pos, loop):
            end = self._walk(item, text, pos, loop, out)
            if end == pos:
                break
            pos, count = end, count + 1
        if op == "+" and not count:
            raise _Stuck
        return pos

    def _shape(self, name: str, kids: list) -> list:
        """What a sub-rule adds to its parent's children, as Lark's tree builder does it."""
        if name.startswith("_"):
            return kids
        if self._parts.options[name].expand1 and len(kids) == 1:
            return kids
        return [_Node(name, kids)]

    def _fits(self, node, text: str, pos: int, cont: str | None) -> bool:
        return self._pattern(node, cont).match(text, pos) is not None

    def _end(self, node, text: str, pos: int, cont: str | None) -> int:
        match = self._pattern(node, cont).match(text, pos)
        if match is None:
            raise _Stuck
        return match.end()

    def _pattern(self, node, cont: str | None) -> re.Pattern:
        key = (id(node), cont)
        if key not in self._patterns:
            body = self._regex(node)
            self._patterns[key] = re.compile(body if cont is None else f"(?:{body})(?={cont})")
        return self._patterns[key]

    def _regex(self, node) -> str:
        if id(node) not in self._plain:
            self._plain[id(node)] = "(?:" + node_regex(self._parts, self._grammar, node, None, ()) + ")"
        return self._plain[id(node)]

    # -- what the walk models ----------------------------------------------------------------

    def _models(self, node, stack: tuple[str, ...], seen: set[str]) -> bool:
        if isinstance(node, Terminal):
            return node.name in self._parts.terms
        if isinstance(node, NonTerminal):
            if node.name in stack:
                return False  # recursive: no regex
            if node.name in seen:
                return True
            seen.add(node.name)
            options = self._parts.options.get(node.name)
            if options is None or options.keep_all_tokens or options.priority is not None \
                    or options.template_source is not None or self._parts.params.get(node.name):
                return False
            return self._models(self._parts.trees[node.name], stack + (node.name,), seen)
        if isinstance(node, Token):
            return str(node).startswith('"')  # an inline /regexp/ token is kept under a made-up name
        kind, kids = node.data, node.children
        if kind == "alias" or (kind == "expr" and (len(kids) != 2 or kids[1] not in ("?", "*", "+"))):
            return False
        if kind not in ("expansions", "expansion", "value", "literal", "maybe", "expr"):
            return False
        return all(self._models(k, stack, seen) for k in kids if not (kind == "expr" and k is kids[1]))


def _to_lark(node: _Node, text: str) -> lark.Tree:
    from lark import Token as LarkToken, Tree as LarkTree

    kids = [_to_lark(k, text) if isinstance(k, _Node) else _token(k.name, text, k.start, k.end)
            for k in node.kids]
    return LarkTree(LarkToken("RULE", node.rule), kids)


def _leaves(node: _Node, text: str, out: list[Token]) -> None:
    for kid in node.kids:
        if isinstance(kid, _Node):
            _leaves(kid, text, out)
        else:
            out.append(Token(kid.name, text[kid.start:kid.end]))


def _token(name: str, text: str, start: int, end: int) -> lark.Token:
    """A Token placed as Lark's dynamic Earley lexer places it (1-based line and column; the
    end column is one past the last character's)."""
    from lark import Token as LarkToken

    line, column = _line_col(text, start)
    end_line, end_column = _line_col(text, end - 1)
    return LarkToken(name, text[start:end], start, line, column, end_line, end_column + 1, end)


def _line_col(text: str, pos: int) -> tuple[int, int]:
    return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
