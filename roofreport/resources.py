"""Locates the files shipped with roofreport: grammars, templates and the package's data tables.

In a source checkout (or an editable install) grammars and templates are the top-level
`grammars/` and `templates/` folders; in a built wheel hatchling copies them into
`roofreport/_data/`. The data tables (GPU peaks, kernel categories, the grammar cache) live in
`roofreport/data/` in both.
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


def package_data(name: str) -> Path:
    """A file of `roofreport/data/` (`gpu_specs.tsv`, `kernel_categories.tsv`, ...)."""
    return _PACKAGE_DIR / "data" / name


def grammar_path(name: str) -> Path:
    return data_dir("grammars") / f"{name}.lark"


def template_dir() -> Path:
    return data_dir("templates")
