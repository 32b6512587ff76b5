"""The report page: one self-contained HTML file with inline CSS and embedded PNG figures.

Every piece of text that reaches the page (titles, summaries, metric names and values, table
cells, captions) is HTML-escaped; figures are embedded as ``data:image/png;base64`` URIs so the
page needs no other file except the NetCDF downloads it links to.
"""

from __future__ import annotations

import base64
import io
import re
from html import escape

from .contents import RUN_ID_META
from .fit_warnings import WARNING_PREFIX
from .glossary import abbreviations_in
from .result import DemoResult

__all__ = ["render_page", "figure_to_base64", "flatten_metrics", "format_value", "metrics_tables",
           "NOTE_COLUMNS"]

#: table columns whose long text is written once per table as a numbered note
NOTE_COLUMNS = ("reason",)
# a cell may join several notes with "; " after a note's closing full stop
_NOTE_SEPARATOR = re.compile(r"(?<=\.);\s+")

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 70rem;
       margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.5; }
h1 { border-bottom: 2px solid #444; padding-bottom: .3rem; }
h2 { margin-top: 2.5rem; border-bottom: 1px solid #bbb; }
.meta { color: #555; font-size: .9rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .2rem .5rem; text-align: right; }
th { background: #f2f2f2; }
td.key, th.key { text-align: left; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: .9rem; font-style: italic; }
ol.notes { color: #444; font-size: .85rem; max-width: 60rem; }
details { margin: 1rem 0; }
p.warning { background: #fff4e0; border-left: 4px solid #c0661a; padding: .4rem .7rem; }
dl.abbreviations { font-size: .85rem; color: #444; }
dl.abbreviations dt { font-weight: 600; float: left; clear: left; margin-right: .5rem; }
dl.abbreviations dd { margin: 0 0 .2rem 0; }
summary { cursor: pointer; font-weight: 600; }
""".strip()


def figure_to_base64(figure, dpi: int = 100) -> str:
    """Draw a matplotlib ``figure`` as PNG and return it base64-encoded (ASCII).

    Example:
        >>> import matplotlib.pyplot as plt
        >>> fig, ax = plt.subplots(); _ = ax.plot([0, 1])
        >>> figure_to_base64(fig)[:8]
        'iVBORw0K'
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def flatten_metrics(metrics: dict, prefix: tuple[str, ...] = ()) -> list[tuple[str, object]]:
    """Flatten nested ``metrics`` into ``("outer / inner", value)`` rows, in insertion order.

    Example:
        >>> flatten_metrics({"nuts": {"ess": 800.0, "rhat": 1.01}})
        [('nuts / ess', 800.0), ('nuts / rhat', 1.01)]
    """
    return [(" / ".join(path), value) for path, value in _leaves(metrics, prefix)]


def _leaves(metrics: dict, prefix: tuple[str, ...] = ()):
    """``(path, value)`` for every non-dict value of nested ``metrics``, in insertion order."""
    for key, value in metrics.items():
        path = prefix + (key,)
        if isinstance(value, dict):
            yield from _leaves(value, path)
        else:
            yield path, value


def metrics_tables(metrics: dict) -> dict:
    """Nested ``metrics`` as one table per top-level entry instead of one row per number.

    In the table of entry ``group``, a value at ``group / a / b / name`` goes to row ``a / b``
    and column ``name``; a group of plain values is one ``value`` column. Top-level values that
    are not dicts share a table named ``"other"``.

    Returns:
        ``{group: pandas.DataFrame}`` of formatted text (empty cells where a row lacks a column).

    Example:
        >>> t = metrics_tables({"table_i": {"ner": {"mv": {"f": 0.5, "p": 0.25}}}})
        >>> t["table_i"].loc["ner / mv"].tolist()
        ['0.5', '0.25']
    """
    import pandas as pd

    groups, loose = {}, {}
    for group, value in metrics.items():
        if not isinstance(value, dict):
            loose[group] = value
            continue
        leaves = list(_leaves(value))
        flat = all(len(path) == 1 for path, _ in leaves)
        rows: dict[str, dict[str, str]] = {}
        for path, leaf in leaves:
            row, column = (path[0], "value") if flat or len(path) == 1 else (
                " / ".join(path[:-1]), path[-1])
            rows.setdefault(row, {})[column] = format_value(leaf)
        groups[group] = pd.DataFrame.from_dict(rows, orient="index").fillna("")
    if loose:
        groups["other"] = pd.DataFrame({"value": {k: format_value(v) for k, v in loose.items()}})
    return groups


def format_value(value) -> str:
    """A metric value as text: floats to six significant digits, lists element by element,
    ``None`` (an undefined number, ``null`` in ``metrics.json``) as ``n/a``."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return str(value)


def _paragraphs(text: str) -> str:
    """Blank-line separated paragraphs; those that start with the warning prefix are marked
    ``class="warning"`` (highlighted)."""
    blocks = [b.strip() for b in text.split("\n\n") if b.strip()]
    return "\n".join(
        f'<p class="warning">{escape(b)}</p>' if b.startswith(WARNING_PREFIX.strip())
        else f"<p>{escape(b)}</p>" for b in blocks)


def _section_text(result: DemoResult) -> str:
    """All the words a result's section shows (not the figures' pixels): summary, captions,
    table names, headers and cells, metric names and values."""
    words = [result.name, result.summary, *result.figures, *result.tables]
    for table in result.tables.values():
        words += [str(c) for c in table.columns] + [str(i) for i in table.index]
        words += [str(v) for v in table.to_numpy().ravel()]
    words += [f"{k} {format_value(v)}" for k, v in flatten_metrics(result.metrics)]
    return "\n".join(words)


def _abbreviations(text: str) -> str:
    """The definitions of the abbreviations ``text`` uses, as a list (empty if none)."""
    found = abbreviations_in(text)
    if not found:
        return ""
    items = "".join(f"<dt>{escape(a)}</dt><dd>{escape(m)}</dd>" for a, m in found)
    return f'<h3>Abbreviations</h3><dl class="abbreviations">{items}</dl>'


def _key_value_table(rows: list[tuple[str, object]], header: tuple[str, str]) -> str:
    head = f'<tr><th class="key">{escape(header[0])}</th><th>{escape(header[1])}</th></tr>'
    body = "".join(
        f'<tr><td class="key">{escape(k)}</td><td>{escape(format_value(v))}</td></tr>'
        for k, v in rows
    )
    return f"<table>{head}{body}</table>"


def _float_format(value: float) -> str:
    return f"{value:.4g}"


def _table_with_notes(name: str, table) -> str:
    """A table whose :data:`NOTE_COLUMNS` cells become note marks ``[1]``, ``[1, 2]``, ...
    with each distinct note written once under the table (a cell's notes joined by ``"; "``
    after a full stop count separately)."""
    notes: dict[str, int] = {}
    columns = [c for c in table.columns if c in NOTE_COLUMNS]
    if columns:
        table = table.copy()
        for column in columns:
            marks = []
            for cell in table[column]:
                cell = "" if cell is None or cell != cell else str(cell).strip()
                numbers = [notes.setdefault(part, len(notes) + 1)
                           for part in _NOTE_SEPARATOR.split(cell) if part.strip()]
                marks.append(f"[{', '.join(map(str, numbers))}]" if numbers else "")
            table[column] = marks
    html_table = table.to_html(escape=True, border=0, float_format=_float_format)
    listed = "".join(f"<li>{escape(text)}</li>" for text in notes)
    note_list = f'<ol class="notes">{listed}</ol>' if notes else ""
    return f"<figure><figcaption>{escape(name)}</figcaption>{html_table}{note_list}</figure>"


def _result_section(result: DemoResult, netcdf_links: dict[str, str]) -> str:
    parts = [f'<section id="{escape(result.name)}">', f"<h2>{escape(result.name)}</h2>"]
    parts.append(_paragraphs(result.summary))
    if result.figures:
        parts.append("<h3>Figures</h3>")
    for name, figure in result.figures.items():
        parts.append(
            f'<figure><img src="data:image/png;base64,{figure_to_base64(figure)}" '
            f'alt="{escape(name)}"><figcaption>{escape(name)}</figcaption></figure>'
        )
    if result.tables:
        parts.append("<h3>Tables</h3>")
    for name, table in result.tables.items():
        parts.append(_table_with_notes(name, table))
    if result.metrics:
        tables = metrics_tables(result.metrics)
        parts.append(f"<details><summary>Metrics as written to metrics.json ({len(tables)} "
                     "tables)</summary>")
        for group, table in tables.items():
            html_table = table.to_html(escape=True, border=0)
            parts.append(f"<figure><figcaption>{escape(group)}</figcaption>{html_table}</figure>")
        parts.append("</details>")
    heading = "Inference data (NetCDF)" if netcdf_links else ""
    if netcdf_links:
        items = "".join(
            f'<li><a href="{escape(href)}">{escape(engine)}</a> ({escape(href)})</li>'
            for engine, href in netcdf_links.items()
        )
        parts.append(f"<h3>{heading}</h3><ul>{items}</ul>")
    parts.append(_abbreviations(_section_text(result) + "\n" + heading))
    parts.append("</section>")
    return "\n".join(parts)


def render_page(
    results: list[DemoResult],
    title: str,
    generated: str,
    versions: dict[str, str],
    netcdf_links: dict[str, dict[str, str]],
    run_id: str = "",
) -> str:
    """The report page as a string.

    Args:
        results: the results, one section each, in order.
        title: the page title.
        generated: the generation date, already formatted.
        versions: package name -> version, listed under the title.
        netcdf_links: result name -> {engine: relative path of its NetCDF file}.
        run_id: the report's run id, written into a ``<meta name="pyromodels-run-id">`` tag
            and beside the generation date (none when empty).

    Returns:
        A complete HTML5 document. Drawing the figures does not close them; the caller does.
    """
    version_rows = list(versions.items())
    nav = "".join(f'<li><a href="#{escape(r.name)}">{escape(r.name)}</a></li>' for r in results)
    sections = "\n".join(_result_section(r, netcdf_links.get(r.name, {})) for r in results)
    run_meta = f'<meta name="{RUN_ID_META}" content="{escape(run_id)}">\n' if run_id else ""
    run_text = f", run {escape(run_id)}" if run_id else ""
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en">\n<head>\n<meta charset="utf-8">\n{run_meta}'
        f"<title>{escape(title)}</title>\n<style>\n{_CSS}\n</style>\n</head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="meta">Generated {escape(generated)}{run_text}</p>\n'
        f"{_key_value_table(version_rows, ('package', 'version'))}\n"
        f"<nav><ul>{nav}</ul></nav>\n"
        f"{sections}\n</body>\n</html>\n"
    )
