"""Bayesian nonparametric parts: stick-breaking priors and samplers for DP mixtures."""

from .blocked import (
    BlockedState,
    assignment_logits,
    blocked_init,
    blocked_labels,
    blocked_log_joint,
    blocked_sweep,
    component_posterior,
    stick_log_weights,
    stick_posterior,
    truncated_dp_mixture,
)

__all__ = [
    "BlockedState",
    "assignment_logits",
    "blocked_init",
    "blocked_labels",
    "blocked_log_joint",
    "blocked_sweep",
    "component_posterior",
    "stick_log_weights",
    "stick_posterior",
    "truncated_dp_mixture",
]
