"""Reports: a self-contained HTML page, ``metrics.json`` and NetCDF files for a list of results.

A result is a :class:`DemoResult` record (:mod:`.result`).

Example:
    >>> from pyromodels.report import DemoResult, write_report
    >>> index = write_report([DemoResult("toy", "A toy.", {"em": {"ll": -3.2}})], "/tmp/r", "Toy")
"""

from .contents import IncompleteReportError, read_report
from .html import figure_to_base64, flatten_metrics, format_value, metrics_tables, render_page
from .posterior import final_values, mcmc_figures, result_from_posterior, scalar_diagnostics
from .result import DemoResult, check_metrics
from .writer import INDEX_NAME, METRICS_NAME, library_versions, read_metrics, write_report

__all__ = [
    "DemoResult",
    "INDEX_NAME",
    "IncompleteReportError",
    "METRICS_NAME",
    "check_metrics",
    "figure_to_base64",
    "final_values",
    "flatten_metrics",
    "format_value",
    "library_versions",
    "mcmc_figures",
    "metrics_tables",
    "read_metrics",
    "read_report",
    "render_page",
    "result_from_posterior",
    "scalar_diagnostics",
    "write_report",
]
