"""Reports: a self-contained HTML page, ``metrics.json`` and NetCDF files for a list of results.

Example:
    >>> from pyromodels.report import write_report
    >>> from pyromodels.registry import DemoResult
    >>> index = write_report([DemoResult("toy", "A toy.", {"em": {"ll": -3.2}})], "/tmp/r", "Toy")
"""

from .html import figure_to_base64, flatten_metrics, format_value, render_page
from .posterior import final_values, result_from_posterior, scalar_diagnostics
from .writer import INDEX_NAME, METRICS_NAME, library_versions, read_metrics, write_report

__all__ = [
    "INDEX_NAME",
    "METRICS_NAME",
    "figure_to_base64",
    "final_values",
    "flatten_metrics",
    "format_value",
    "library_versions",
    "read_metrics",
    "render_page",
    "result_from_posterior",
    "scalar_diagnostics",
    "write_report",
]
