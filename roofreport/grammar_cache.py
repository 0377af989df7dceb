"""The grammars' rule trees and terminal regexes, precomputed and shipped in the package.

Building a grammar with Lark's GrammarBuilder costs 5-15 ms per grammar and process (Lark first
builds its own LALR parser for .lark files, then parses the text), a large part of a small
file's whole parse. What `Grammar` keeps of it (rule trees, rule options, terminal regexes)
depends only on the .lark files and Lark's version, so it is stored as JSON in
`roofreport/data/grammar_cache.json`, each grammar under a key hashing those. A grammar whose
key differs (edited since, or another Lark) is built from its source as before: a stale cache
is slower, never wrong. After editing a grammar, regenerate it:

    python -m roofreport.grammar_cache

(`tests/test_startup.py` fails while the shipped cache is stale.)
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import NamedTuple

import lark
from lark import Token, Tree
from lark.grammar import NonTerminal, RuleOptions, Terminal

from roofreport.resources import data_dir

CACHE_PATH = Path(__file__).resolve().parent / "data" / "grammar_cache.json"
_FORMAT = 1  # bump when the stored form changes


class Parts(NamedTuple):
    """What a `Grammar` is made of, however it was obtained."""

    starts: list[str]
    trees: dict          # rule -> rule tree (Lark's EBNF tree, as GrammarBuilder builds it)
    options: dict        # rule -> RuleOptions
    params: dict         # rule -> template parameters
    terms: dict          # named terminal -> its regex
    literals: dict       # named terminal that is a plain string -> the string


def key(name: str) -> str:
    """Hash of everything a grammar's parts depend on: every .lark file (a grammar imports
    others), its name, Lark's version and this cache's format."""
    digest = hashlib.sha256(f"{_FORMAT}\0{lark.__version__}\0{name}\0".encode())
    for path in sorted(data_dir("grammars").glob("*.lark")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read(name: str) -> Parts | None:
    """The cached parts of grammar `name`, or None when absent or stale."""
    entry = _entries().get(name)
    if entry is None or entry.get("key") != key(name):
        return None
    rules = entry["rules"]
    return Parts(starts=entry["starts"],
                 trees={r: _decode(tree) for r, (tree, _, _) in rules.items()},
                 options={r: _options(opts) for r, (_, opts, _) in rules.items()},
                 params={r: params for r, (_, _, params) in rules.items()},
                 terms=entry["terms"], literals=entry["literals"])


@cache
def _entries() -> dict:
    try:
        return json.loads(CACHE_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def entry(name: str, parts: Parts) -> dict:
    """The JSON form of one grammar's parts."""
    return {"key": key(name), "starts": parts.starts, "terms": parts.terms,
            "literals": parts.literals,
            "rules": {r: [_encode(tree), _options_json(parts.options[r]),
                          [str(p) for p in parts.params[r]]]
                      for r, tree in parts.trees.items()}}


def write() -> Path:
    """Rebuild every grammar from its source and store the cache."""
    from roofreport import grammar

    names = sorted(p.stem for p in data_dir("grammars").glob("*.lark") if p.stem != "common")
    entries = {name: entry(name, grammar.build_parts(name, grammar.source(name))) for name in names}
    CACHE_PATH.write_text(json.dumps(entries, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    _entries.cache_clear()
    return CACHE_PATH


# -- tree nodes <-> JSON -----------------------------------------------------------------------

def _encode(node):
    if isinstance(node, Tree):
        return ["tree", str(node.data), [_encode(kid) for kid in node.children]]
    if isinstance(node, NonTerminal):
        return ["rule", node.name]
    if isinstance(node, Terminal):
        return ["terminal", node.name, node.filter_out]
    if isinstance(node, Token):
        return ["token", node.type, str(node)]
    if node is None:
        return None
    raise TypeError(f"grammar cache: cannot store a {type(node).__name__}")


def _decode(item):
    if item is None:
        return None
    kind = item[0]
    if kind == "tree":
        return Tree(item[1], [_decode(kid) for kid in item[2]])
    if kind == "rule":
        return NonTerminal(item[1])
    if kind == "terminal":
        return Terminal(item[1], filter_out=item[2])
    return Token(item[1], item[2])


def _options_json(options: RuleOptions | None) -> list | None:
    if options is None:
        return None
    return [options.keep_all_tokens, options.expand1, options.priority, options.template_source,
            list(options.empty_indices)]


def _options(item: list | None) -> RuleOptions | None:
    if item is None:
        return None
    keep_all_tokens, expand1, priority, template_source, empty = item
    return RuleOptions(keep_all_tokens, expand1, priority=priority,
                       template_source=template_source, empty_indices=tuple(empty))


if __name__ == "__main__":
    print(f"wrote {write()}")
