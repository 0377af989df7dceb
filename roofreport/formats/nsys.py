"""nsys logs (not yet readable: filled in by the nsys issue)."""

from __future__ import annotations

from roofreport.formats.base import FormatSpec

SPECS: list[FormatSpec] = []
BINARY_SPECS: list[FormatSpec] = []
