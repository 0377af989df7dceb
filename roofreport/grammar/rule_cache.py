"""The grammars' rule trees and terminal regexes, precomputed and shipped in the package.

Building a grammar with Lark's GrammarBuilder costs 5-15 ms per grammar and process (Lark first
builds its own LALR parser for .lark files, then parses the text), a large part of a small
file's whole parse. What `Grammar` keeps of it (rule trees, rule options, terminal regexes)
depends only on the .lark files and Lark's version, so it is stored as JSON in
`roofreport/data/grammar_cache.json`, each grammar under a key hashing those. A grammar whose
key differs (edited since, or another Lark) is built from its source as before: a stale cache
is slower, never wrong. After editing a grammar, regenerate it:

    python -m roofreport.grammar

(`tests/test_startup.py` fails while the shipped cache is stale.)

The rule trees are held in the small node classes of `rules.py` (shaped as Lark's), so that a
run whose regexes suffice never imports Lark (~10 ms): only the parse trees of structural lines
(`tree.py`) and the Earley parser need it. `lark_build.build_parts` turns what GrammarBuilder
builds into the same classes. Each rule is stored as a JSON string of its own, decoded when the rule is first
asked for: a run uses a few rules, and reading the file costs a quarter of parsing it whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from roofreport.grammar.rules import NonTerminal, Options, Parts, Terminal, Token, Tree
from roofreport.resources import data_dir, package_data

CACHE_PATH = package_data("grammar_cache.json")
_FORMAT = 4  # bump when the stored form or the key changes
_VERSION = re.compile(r"^__version__(?:\s*:\s*\w+)?\s*=\s*['\"]([^'\"]+)['\"]", re.M)


def key(name: str) -> str:
    """Hash of everything a grammar's parts depend on: every .lark file (a grammar imports
    others), its name, the Lark version that built them and this cache's format."""
    return hashlib.sha256(f"{_FORMAT}\0{name}\0lark {lark_version()}\0{_sources_digest()}".encode()).hexdigest()


@cache
def lark_version() -> str:
    """The installed Lark's version, read from its `__init__.py` without importing it (~10 ms)."""
    spec = find_spec("lark")
    if spec is None or not spec.origin:
        return "none"
    text = Path(spec.origin).read_text(encoding="utf-8")
    found = _VERSION.search(text)
    # (a release that spells its version otherwise is keyed on its file's bytes: never stale)
    return found.group(1) if found else hashlib.sha256(text.encode()).hexdigest()


@cache
def _sources_digest() -> str:
    """The .lark files' names and bytes, read once per process."""
    digest = hashlib.sha256()
    for path in sorted(data_dir("grammars").glob("*.lark")):
        digest.update(b"\0" + path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read(name: str) -> Parts | None:
    """The cached parts of grammar `name`, or None when absent or stale."""
    entry = _entries().get(name)
    if entry is None or entry.get("key") != key(name):
        return None
    stored, decoded = entry["rules"], {}
    return Parts(starts=entry["starts"], trees=_Rules(stored, decoded, 0),
                 options=_Rules(stored, decoded, 1), params=_Rules(stored, decoded, 2),
                 terms=entry["terms"], literals=entry["literals"])


class _Rules(Mapping):
    """rule -> one part (0 tree, 1 options, 2 template parameters) of the rule's stored entry,
    decoded when the rule is first asked for, then kept (`grammar/tree.py` caches patterns by
    node identity). The three views share the decoded entries."""

    def __init__(self, stored: dict[str, str], decoded: dict, part: int):
        self._stored, self._decoded, self._part = stored, decoded, part

    def __getitem__(self, rule: str):
        if rule not in self._decoded:
            tree, options, params = json.loads(self._stored[rule])
            self._decoded[rule] = (_decode(tree), _options(options), params)
        return self._decoded[rule][self._part]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)


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
            "rules": {r: json.dumps([_encode(tree), _options_json(parts.options[r]),
                                     [str(p) for p in parts.params[r]]], separators=(",", ":"))
                      for r, tree in parts.trees.items()}}


def write() -> Path:
    """Rebuild every grammar from its source and store the cache."""
    from roofreport.grammar.lark_build import build_parts, source

    _sources_digest.cache_clear()
    names = sorted(p.stem for p in data_dir("grammars").glob("*.lark") if p.stem != "common")
    entries = {name: entry(name, build_parts(name, source(name))) for name in names}
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


def _options_json(options: Options | None) -> list | None:
    if options is None:
        return None
    return [options.keep_all_tokens, options.expand1, options.priority, options.template_source,
            list(options.empty_indices)]


def _options(item: list | None) -> Options | None:
    if item is None:
        return None
    keep_all_tokens, expand1, priority, template_source, empty = item
    return Options(keep_all_tokens, expand1, priority, template_source, tuple(empty))

