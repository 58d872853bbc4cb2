"""Reports as a list of blocks, written as Markdown (images linked) and self-contained HTML.

The HTML embeds every figure as a base64 PNG so one file can be mailed or attached to an issue;
the Markdown links the same PNG files by relative path so it renders on GitHub next to them.
"""

from __future__ import annotations

import base64
import html
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from vision_bench.errors import UserError
from vision_bench.io.atomic import atomic_write_text, output_folder


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Table:
    """Rows of already formatted cells; `groups` (label, span) adds a spanning header row."""

    columns: list[str]
    rows: list[list[str]]
    title: str = ""
    groups: list[tuple[str, int]] = field(default_factory=list)
    note: str = ""

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise UserError(f"table {self.title!r}: a row has {len(row)} cells for {len(self.columns)} columns")


@dataclass(frozen=True)
class Figure:
    """A PNG file on disk; `path` is absolute or relative to the report folder."""

    path: Path
    caption: str = ""


Block = Heading | Paragraph | Table | Figure


@dataclass
class Report:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> None:
        self.blocks.extend(blocks)


def count_of(n: int, noun: str) -> str:
    """'1 experiment', '3 experiments': a count and its noun, plural unless it is one."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def format_value(value: float | None, digits: int = 4, fixed: bool = False) -> str:
    """A number for a table: `fixed` gives `digits` decimals, otherwise `digits` significant ones."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}" if fixed else f"{value:.{digits}g}"


def format_mean_sem(mean: float | None, sem: float | None, digits: int = 4, fixed: bool = False) -> str:
    """`mean ± sem`, or just the mean when there is a single value (no spread to report)."""
    text = format_value(mean, digits, fixed)
    if sem is None or (isinstance(sem, float) and math.isnan(sem)) or text == "n/a":
        return text
    return f"{text} ± {format_value(sem, digits, fixed)}"


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown_table(table: Table) -> list[str]:
    lines = [f"**{table.title}**", ""] if table.title else []
    columns = list(table.columns)
    if table.groups:
        position = len(columns) - sum(span for _, span in table.groups)
        for label, span in table.groups:
            for i in range(position, position + span):
                columns[i] = f"{label} {columns[i]}"
            position += span
    lines.append("| " + " | ".join(_markdown_cell(c) for c in columns) + " |")
    lines.append("|" + "|".join("---" for _ in columns) + "|")
    lines.extend("| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in table.rows)
    if table.note:
        lines += ["", f"_{table.note}_"]
    return lines


def _relative(path: Path, base: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), base.resolve())).as_posix()


def to_markdown(report: Report, base: Path) -> str:
    """The report as Markdown; figures are linked relative to `base` (the report's folder)."""
    lines = [f"# {report.title}", ""]
    for block in report.blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Paragraph):
            lines += [block.text, ""]
        elif isinstance(block, Table):
            lines += _markdown_table(block) + [""]
        else:
            lines += [f"![{block.caption}]({_relative(_resolve(block.path, base), base)})", ""]
    return "\n".join(lines).rstrip() + "\n"


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:0.3em 0.6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
img{max-width:100%;border:1px solid #ddd}figcaption,.note{color:#555;font-size:0.9em}
"""


def _html_table(table: Table) -> str:
    parts = ["<table>"]
    if table.title:
        parts.append(f"<caption><b>{html.escape(table.title)}</b></caption>")
    if table.groups:
        lead = len(table.columns) - sum(span for _, span in table.groups)
        cells = "".join("<th></th>" for _ in range(lead))
        cells += "".join(f'<th colspan="{span}">{html.escape(label)}</th>' for label, span in table.groups)
        parts.append(f"<tr>{cells}</tr>")
    parts.append("<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in table.columns) + "</tr>")
    for row in table.rows:
        parts.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>")
    parts.append("</table>")
    if table.note:
        parts.append(f'<p class="note">{html.escape(table.note)}</p>')
    return "\n".join(parts)


def _embedded_image(path: Path, caption: str) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    alt = html.escape(caption)
    figure = f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">'
    if caption:
        figure += f"<figcaption>{alt}</figcaption>"
    return figure + "</figure>"


def _resolve(path: Path, base: Path) -> Path:
    return Path(path) if Path(path).is_absolute() else base / path


def to_html(report: Report, base: Path) -> str:
    """The report as one HTML page with every figure embedded (no external files needed)."""
    body = [f"<h1>{html.escape(report.title)}</h1>"]
    for block in report.blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            body.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, Table):
            body.append(_html_table(block))
        else:
            body.append(_embedded_image(_resolve(block.path, base), block.caption))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(report.title)}</title><style>{_STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def write_report(report: Report, out_dir: Path, stem: str = "report") -> tuple[Path, Path]:
    """Write `stem.md` and `stem.html` into `out_dir` (each through a temporary file); return both paths."""
    out_dir = output_folder(out_dir)
    markdown_path, html_path = out_dir / f"{stem}.md", out_dir / f"{stem}.html"
    atomic_write_text(markdown_path, to_markdown(report, out_dir))
    atomic_write_text(html_path, to_html(report, out_dir))
    return markdown_path, html_path
