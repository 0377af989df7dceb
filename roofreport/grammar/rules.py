"""The rule trees of the grammars, and the regular expressions compiled from them.

Lark's GrammarBuilder reads a `.lark` file into rule trees (EBNF: sequences, alternatives, `?`,
`*`, `+`, terminals, literals, sub-rules) and terminal regexes. roofreport keeps them in the small
node classes here (`Tree`, `NonTerminal`, `Terminal`, `Token`, `Options`, shaped as Lark's),
bundled as a grammar's `Parts`: the shipped cache stores them (`rule_cache.py`), `lark_build.py`
builds them from the source, and both `Grammar` (the line regexes) and the tree walk (`tree.py`)
read them through `node_regex`, so the regex a rule compiles to is written once. Nothing here
imports Lark except `from_lark`, which converts GrammarBuilder's nodes.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Tree:
    """A node of a rule's EBNF tree (`expansions`, `expansion`, `expr`, `value`, ...)."""

    __slots__ = ("data", "children")

    def __init__(self, data: str, children: list):
        self.data, self.children = data, children

    def __eq__(self, other) -> bool:
        return type(other) is Tree and self.data == other.data and self.children == other.children

    __hash__ = None  # mutable, like Lark's

    def __repr__(self) -> str:
        return f"Tree({self.data!r}, {self.children!r})"


class Symbol:
    """A rule (`NonTerminal`) or terminal (`Terminal`) named in a rule."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.name == other.name

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class NonTerminal(Symbol):
    __slots__ = ()


class Terminal(Symbol):
    __slots__ = ("filter_out",)

    def __init__(self, name: str, filter_out: bool = False):
        super().__init__(name)
        self.filter_out = filter_out


class Token(str):
    """A literal or operator written in a rule (`"=="`, `/re/`, `?`), with its Lark type."""

    def __new__(cls, type_: str, value: str):
        token = super().__new__(cls, value)
        token.type = type_
        return token

    def __eq__(self, other) -> bool:
        if isinstance(other, Token) and self.type != other.type:
            return False
        return str.__eq__(self, other)

    __hash__ = str.__hash__

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {str(self)!r})"


class Options(NamedTuple):
    """A rule's options (Lark's RuleOptions: `?rule`, `!rule`, priority, template)."""

    keep_all_tokens: bool
    expand1: bool
    priority: int | None
    template_source: str | None
    empty_indices: tuple


def from_lark(node):
    """A rule-tree node as GrammarBuilder builds it (Lark's classes) in this module's classes."""
    from lark import Token as LarkToken, Tree as LarkTree
    from lark.grammar import NonTerminal as LarkNonTerminal, Terminal as LarkTerminal

    if isinstance(node, LarkTree):
        return Tree(str(node.data), [from_lark(kid) for kid in node.children])
    if isinstance(node, LarkNonTerminal):
        return NonTerminal(node.name)
    if isinstance(node, LarkTerminal):
        return Terminal(node.name, node.filter_out)
    if isinstance(node, LarkToken):
        return Token(node.type, str(node))
    if node is None:
        return None
    raise TypeError(f"grammar cache: cannot hold a {type(node).__name__}")


def options_from_lark(options) -> Options | None:
    if options is None:
        return None
    return Options(options.keep_all_tokens, options.expand1, options.priority,
                   options.template_source, tuple(options.empty_indices))


class Parts(NamedTuple):
    """What a `Grammar` is made of, however it was obtained."""

    starts: list[str]
    trees: dict          # rule -> rule tree (Lark's EBNF tree, as GrammarBuilder builds it)
    options: dict        # rule -> RuleOptions
    params: dict         # rule -> template parameters
    terms: dict          # named terminal -> its regex
    literals: dict       # named terminal that is a plain string -> the string


# -- regexes ------------------------------------------------------------------------------------

def node_regex(parts: Parts, grammar: str, node, seen: dict[str, int] | None = None,
           stack: tuple[str, ...] = ()) -> str:
    """The regex of a node of `grammar`'s rule trees; named terminals become named groups, or
    plain groups when `seen` is None (pieces of a rule, for the tree walk in `tree.py`)."""
    if isinstance(node, Terminal):
        return _group(node.name, parts.terms[node.name], seen)
    if isinstance(node, NonTerminal):
        if node.name in stack:
            raise ValueError(f"{grammar}.lark: rule {node.name} is recursive; "
                             "only non-recursive rules compile to a regex")
        return "(?:" + node_regex(parts, grammar, parts.trees[node.name], seen, stack + (node.name,)) + ")"
    if isinstance(node, Token):  # literal string or /regexp/ written inside a rule
        return "(?:" + _literal_regex(str(node)) + ")"
    assert isinstance(node, Tree), node
    kind, kids = node.data, node.children
    if kind == "expansions":
        return "|".join("(?:" + node_regex(parts, grammar, k, seen, stack) + ")" for k in kids)
    if kind == "expansion":
        # `a (b | c) d`: the inner alternatives are grouped, or `|` would split the sequence
        return "".join(f"(?:{node_regex(parts, grammar, k, seen, stack)})"
                       if isinstance(k, Tree) and k.data == "expansions"
                       else node_regex(parts, grammar, k, seen, stack) for k in kids)
    if kind in ("value", "literal", "alias"):
        return node_regex(parts, grammar, kids[0], seen, stack)
    if kind == "maybe":
        return "(?:" + node_regex(parts, grammar, kids[0], seen, stack) + ")?"
    if kind == "expr":
        inner = "(?:" + node_regex(parts, grammar, kids[0], seen, stack) + ")"
        op = kids[1]
        if op in ("?", "*", "+"):
            return inner + str(op)
        if len(kids) == 3:  # item ~ n..m
            return inner + "{%s,%s}" % (kids[1], kids[2])
        return inner + "{%s}" % op
    raise ValueError(f"{grammar}.lark: cannot compile {kind!r} to a regex")

def _group(name: str, pattern: str, seen: dict[str, int] | None) -> str:
    if seen is None or name.startswith("_"):
        return f"(?:{pattern})"
    group = name.lower()
    seen[group] = seen.get(group, 0) + 1
    if seen[group] > 1:
        group = f"{group}_{seen[group]}"
    return f"(?P<{group}>{pattern})"


def _literal_regex(token: str) -> str:
    if token.startswith('"'):
        body, _, flags = token[1:].rpartition('"')
        rx = re.escape(body.encode("latin-1", "backslashreplace").decode("unicode_escape"))
    else:  # /regexp/flags
        body, _, flags = token[1:].rpartition("/")
        rx = body
    return f"(?{flags}:{rx})" if flags else rx
