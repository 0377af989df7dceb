"""Locates the grammars and templates shipped with roofreport.

In a source checkout (or an editable install) they are the top-level `grammars/` and
`templates/` folders; in a built wheel hatchling copies them into `roofreport/_data/`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


@cache
def data_dir(kind: str) -> Path:
    """The folder holding `kind` ("grammars" or "templates")."""
    for candidate in (_PACKAGE_DIR / "_data" / kind, _PACKAGE_DIR.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"roofreport installation is missing its {kind}/ folder")


def grammar_path(name: str) -> Path:
    return data_dir("grammars") / f"{name}.lark"


def template_dir() -> Path:
    return data_dir("templates")
