"""The page: the `Report` context through Jinja (autoescape on, StrictUndefined) into one
self-contained HTML document (interactive for the HTML file, static for the PDF), and the
static one through WeasyPrint into a PDF.

WeasyPrint gets a URL fetcher that refuses everything but `data:` URIs: a report built from
untrusted logs never reaches the network or the file system while rendering.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from contextlib import contextmanager
from functools import lru_cache
from typing import TYPE_CHECKING

from roofreport.errors import RenderError
from roofreport.report.context import Report, for_page

if TYPE_CHECKING:
    from markupsafe import Markup

TEMPLATE = "report.html"


_BREAK_AFTER = re.compile(r"([/_:,(.])")


_SHORT = 24


def breakable(text) -> Markup:
    """Escaped text with line-break opportunities after / _ : , ( . so that long kernel names
    wrap inside narrow table cells instead of widening the page (short ones need none: each
    <wbr> costs layout time). Escaping comes first; these characters never occur in an entity."""
    from markupsafe import Markup, escape
    escaped = str(escape(text))
    return Markup(escaped if len(text) <= _SHORT else _BREAK_AFTER.sub(r"\1<wbr>", escaped))


_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def heading_breaks(text) -> Markup:
    """A column heading with break opportunities between the words of a camelCase name
    (`cudaDeviceSynchronize` in a narrow column breaks as cuda|Device|Synchronize, not anywhere)."""
    from markupsafe import Markup, escape
    return Markup(_CAMEL.sub("<wbr>", str(escape(text))) if len(text) > 12 else escape(text))


@lru_cache(maxsize=1)
def environment():
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    from roofreport.resources import template_dir
    env = Environment(loader=FileSystemLoader(template_dir()), autoescape=True, undefined=StrictUndefined,
                      keep_trailing_newline=True)
    env.filters["breakable"] = breakable
    env.filters["heading_breaks"] = heading_breaks
    return env


def render_html(report: Report, interactive: bool = False) -> str:
    """The page; `interactive`: the HTML file's (inline roofline SVG, hover, run toggles and
    sortable tables, one inline script), else the static page the PDF is made from (without the
    HTML's screen-only blocks: `context.for_page`)."""
    from jinja2 import TemplateError

    page = for_page(report, interactive)
    try:
        return environment().get_template(TEMPLATE).render(report=page, interactive=interactive)
    except TemplateError as exc:
        raise RenderError(f"report template failed: {exc}") from exc


class RefusedFetch(ValueError):
    """A resource the report tried to load (it must load none but its own data: URIs)."""


def refuse_fetch(url: str) -> None:
    """Raise for any URL that is not a `data:` URI (checked before anything is opened)."""
    if not url.startswith("data:"):
        raise RefusedFetch(f"roofreport fetches nothing while rendering (refused {url[:200]!r})")


def offline_fetcher():
    """A WeasyPrint URL fetcher that only opens `data:` URIs."""
    import weasyprint.urls as urls

    if hasattr(urls, "URLFetcher"):            # WeasyPrint >= 66: a fetcher class
        class OfflineFetcher(urls.URLFetcher):
            def __init__(self):
                super().__init__(allowed_protocols=("data",), allow_redirects=False)

            def fetch(self, url, headers=None):
                refuse_fetch(url)
                return super().fetch(url, headers)
        return OfflineFetcher()

    def fetch(url, *args, **kwargs):           # older WeasyPrint: a function returning a dict
        refuse_fetch(url)
        return urls.default_url_fetcher(url, *args, **kwargs)
    return fetch


@contextmanager
def _quiet(name: str = "weasyprint"):
    """WeasyPrint logs CSS it skips and resources it may not load; the library prints nothing."""
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


PDF_LIBRARIES_HELP = ("install Pango (README: \"System libraries\": apt-get install libpango-1.0-0 "
                      "libpangoft2-1.0-0 libharfbuzz-subset0, brew install pango, or conda install -c "
                      "conda-forge pango), "
                      "or write the HTML report instead: -o report.html")


def _loader_cache_lookup():
    """`ctypes.util.find_library`'s first answer, the dynamic loader's cache (`ldconfig -p`),
    read once (None where ldconfig cannot run or is not glibc's)."""
    import ctypes.util
    import struct
    import subprocess

    try:
        listing = subprocess.run(["/sbin/ldconfig", "-p"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env={"LC_ALL": "C", "LANG": "C"},
                                 check=False).stdout
    except OSError:
        return None
    abi = "libc6,x86-64" if (os.uname().machine, struct.calcsize("l")) == ("x86_64", 8) else "libc6"

    def find_library(name: str) -> str | None:
        found = re.search(rb"\s+(lib%s\.[^\s]+)\s+\(%s" % (re.escape(os.fsencode(name)), abi.encode()), listing)
        return os.fsdecode(found.group(1)) if found else None
    return find_library if listing else None


@contextmanager
def _libraries_from_loader_cache():
    """While WeasyPrint is imported on Linux: cffi opens each library name it cannot open as
    given through `ctypes.util.find_library`, which runs `ldconfig -p`, then gcc and ld, for
    each name, and WeasyPrint tries up to six names a library, most of them other platforms'
    spellings before the Linux soname, which opens directly: 22 ldconfig and 16 gcc runs,
    0.15 s of CPU in every PDF build. Here `find_library` answers from the loader's cache
    read once, its own first source; the compiler and linker it would ask next find what
    the soname, which WeasyPrint also tries, opens anyway."""
    import ctypes.util

    lookup = _loader_cache_lookup() if sys.platform.startswith("linux") else None
    if lookup is None:
        yield
        return
    original = ctypes.util.find_library
    ctypes.util.find_library = lookup
    try:
        yield
    finally:
        ctypes.util.find_library = original


def _import_weasyprint():
    """`weasyprint`, its system libraries looked up from the loader's cache first
    (`_libraries_from_loader_cache`); if that fails, imported again the ordinary way, so that a
    missing library fails exactly as it does without the shortcut."""
    try:
        with _libraries_from_loader_cache():
            import weasyprint
    except OSError:
        import weasyprint
    return weasyprint


def check_pdf_writer(target) -> None:
    """Load WeasyPrint and the system libraries it opens as it is imported (Pango, GObject,
    HarfBuzz: not Python packages, so pip cannot bring them): a build that could not write
    its PDF hears so before it reads anything, not after."""
    try:
        _import_weasyprint()
    except OSError as exc:   # cffi: "cannot load library 'libgobject-2.0-0': ..."
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise RenderError(f"cannot write {target}: the PDF writer (WeasyPrint) cannot load a system library "
                          f"({first}): {PDF_LIBRARIES_HELP}") from None
    except ImportError as exc:
        raise RenderError(f"cannot write {target}: the PDF writer (WeasyPrint) is not installed ({exc}): "
                          "pip install weasyprint, or write the HTML report instead: -o report.html") from None


def write_pdf(html: str, target) -> None:
    weasyprint = _import_weasyprint()

    try:
        with _quiet():
            weasyprint.HTML(string=html, base_url=None, url_fetcher=offline_fetcher()).write_pdf(target)
    except (OSError, ValueError, TypeError, AttributeError, AssertionError) as exc:
        raise RenderError(f"PDF rendering failed: {type(exc).__name__}: {exc}") from exc
