"""A grammar's `Parts` built from its `.lark` source with Lark's GrammarBuilder.

Used when the shipped cache (`rule_cache.py`) is stale for a grammar (edited since, or another
Lark), and by `python -m roofreport.grammar` to rewrite the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roofreport.grammar.rules import Parts, from_lark, options_from_lark
from roofreport.resources import data_dir, grammar_path

if TYPE_CHECKING:
    import lark


def source(name: str) -> str:
    return grammar_path(name).read_text(encoding="utf-8")


def build_parts(name: str, text: str) -> Parts:
    """Rule trees and terminal regexes of a grammar's text, built by Lark's GrammarBuilder."""
    from lark.lexer import PatternStr
    from lark.load_grammar import GrammarBuilder

    builder = GrammarBuilder(import_paths=[str(data_dir("grammars"))])
    builder.load_grammar(text, name)
    built = builder.build()
    terminals = _terminals(built)
    return Parts(
        starts=[str(r[0]) for r in built.rule_defs if not str(r[0]).startswith("_")],
        trees={str(rule): from_lark(tree) for rule, _, tree, _ in built.rule_defs},
        options={str(rule): options_from_lark(options)
                 for rule, _, _, options in built.rule_defs},
        params={str(rule): [str(p) for p in params] for rule, params, _, _ in built.rule_defs},
        terms={t.name: _term_regex(t) for t in terminals},
        literals={t.name: t.pattern.value for t in terminals
                  if isinstance(t.pattern, PatternStr) and not t.pattern.flags})


def _terminals(built: lark.load_grammar.Grammar) -> list[lark.lexer.TerminalDef]:
    """The grammar's named terminals as patterns: the first step of Lark's `Grammar.compile`
    alone (compiling every rule to BNF as well would cost 3-4 times more)."""
    from lark.lexer import TerminalDef
    from lark.load_grammar import (
        PrepareLiterals,
        TerminalTreeToPattern,
        nr_deepcopy_tree,
    )

    to_pattern = PrepareLiterals() * TerminalTreeToPattern()
    return [TerminalDef(name, to_pattern.transform(nr_deepcopy_tree(tree)), priority)
            for name, (tree, priority) in built.term_defs if tree]


def _term_regex(term) -> str:
    rx = term.pattern.to_regexp()
    flags = "".join(sorted(term.pattern.flags))
    return f"(?{flags}:{rx})" if flags else rx
