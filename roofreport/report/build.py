"""Report orchestration (first version: a plain inventory of what was parsed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from roofreport.output import atomic_path


@dataclass(frozen=True)
class ReportOptions:
    title: str | None = None
    gpu_override: str | None = None
    peaks_file: Path | None = None
    top_n: int = 10
    window: tuple[float, float] | None = None
    inputs: list[Path] = field(default_factory=list)

    @classmethod
    def from_cli(cls, title, gpu_override, peaks_file, top_n, window, inputs) -> "ReportOptions":
        from roofreport.errors import UsageError
        span = None
        if window:
            try:
                start, _, end = window.partition(":")
                span = (float(start or 0), float(end) if end else float("inf"))
            except ValueError:
                raise UsageError(f"--window must be START:END in seconds, not {window!r}") from None
        return cls(title=title, gpu_override=gpu_override, peaks_file=peaks_file, top_n=top_n,
                   window=span, inputs=inputs)


def build_report(dataset, output: Path, html_out: Path | None, options: ReportOptions) -> list[Path]:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    from roofreport.resources import template_dir

    env = Environment(loader=FileSystemLoader(template_dir()), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined)
    html = env.get_template("inventory.html").render(
        title=options.title or "roofreport", files=[f.as_json() for f in dataset.files],
        runs=dataset["runs"].to_dicts())
    written = []
    html_target = html_out or (output if output.suffix.lower() in (".html", ".htm") else None)
    if html_target is not None:
        with atomic_path(html_target) as tmp:
            tmp.write_text(html, encoding="utf-8")
        written.append(html_target)
    if output.suffix.lower() == ".pdf":
        import weasyprint
        with atomic_path(output) as tmp:
            weasyprint.HTML(string=html, url_fetcher=_refuse_fetch).write_pdf(tmp)
        written.append(output)
    return written


def _refuse_fetch(url: str, *args, **kwargs):
    raise ValueError(f"roofreport fetches nothing while rendering (refused {url!r})")
