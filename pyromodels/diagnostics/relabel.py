"""Undoing label switching: align every draw's labels to a reference labelling.

For draw ``s`` with labels ``z^(s)`` and a reference labelling ``r`` of the same points, the
overlap matrix ``A_kl = #{i : z_i^(s) = k, r_i = l}`` scores every renaming; the permutation
``sigma_s`` maximising ``sum_k A_{k sigma_s(k)}`` (the Hungarian method,
``scipy.optimize.linear_sum_assignment``) renames label ``k`` to ``sigma_s(k)``. Parameters
indexed by component are then permuted with the same ``sigma_s``, so that component ``l`` of
every draw describes the same cluster.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from ..checks import as_label_tensor, check_int
from ..core.posterior import Posterior, check_posterior
from .label_invariant import check_label_draws

__all__ = ["hungarian_relabel", "relabel", "permute_components"]


def hungarian_relabel(z, reference, num_classes: int) -> torch.Tensor:
    """Per-draw permutations aligning each draw's labels with ``reference`` by maximum overlap.

    Args:
        z: integer labels shaped ``(chain, draw, N)`` with values in ``[0, num_classes)``.
        reference: integer labels shaped ``(N,)`` with values in ``[0, num_classes)``.
        num_classes: number of labels ``K``.

    Returns:
        ``long`` tensor ``(chain, draw, K)``: ``perm[c, d, k]`` is the new name of label ``k``
        in draw ``(c, d)``, so the aligned labels are ``perm[c, d][z[c, d]]``. Each
        ``perm[c, d]`` is a permutation of ``0 .. K-1``; labels absent from a draw are matched
        to whatever reference labels remain.

    Example:
        >>> z = torch.tensor([[[1, 1, 0]]])
        >>> hungarian_relabel(z, torch.tensor([0, 0, 1]), 2).tolist()
        [[[1, 0]]]
    """
    k = check_int(num_classes, "num_classes", minimum=1)
    z = check_label_draws(z, num_classes=k)
    chains, draws, n = z.shape
    ref = as_label_tensor(reference, "reference", num_classes=k, ndim=1, device=z.device)
    if ref.shape[0] != n:
        raise ValueError(f"reference must have one label per point ({n}), got {ref.shape[0]}")
    flat = z.reshape(chains * draws, n)
    draw_index = torch.arange(flat.shape[0], device=z.device).unsqueeze(-1)
    cell = (draw_index * k + flat) * k + ref
    overlap = torch.bincount(cell.reshape(-1), minlength=flat.shape[0] * k * k)
    overlap = overlap.reshape(-1, k, k).cpu().numpy()
    perms = np.empty((flat.shape[0], k), dtype=np.int64)
    for s in range(flat.shape[0]):
        rows, cols = linear_sum_assignment(overlap[s], maximize=True)
        perms[s, rows] = cols
    return torch.from_numpy(perms).to(z.device).reshape(chains, draws, k)


def _component_axes(site: str, spec, ndim: int) -> tuple[int, ...]:
    axes = spec if isinstance(spec, tuple) else (spec,)
    out = []
    for axis in axes:
        axis = check_int(axis, f"component_sites[{site!r}]", minimum=-ndim, maximum=ndim - 1)
        out.append(axis % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"component_sites[{site!r}] repeats an axis: {spec!r}")
    return tuple(out)


def permute_components(values: torch.Tensor, perm: torch.Tensor, axis: int) -> torch.Tensor:
    """Rename the components of ``values`` along ``axis`` by per-draw permutations.

    Args:
        values: tensor ``(chain, draw, *site_shape)``.
        perm: ``(chain, draw, K)`` permutations as returned by :func:`hungarian_relabel`.
        axis: the component axis counted in the full tensor (at least 2), of size ``K``.

    Returns:
        A tensor ``out`` with ``out[c, d, ..., perm[c, d, k], ...] = values[c, d, ..., k, ...]``.
    """
    inverse = perm.argsort(-1)  # inverse[c, d, l] = the old label renamed to l
    shape = [1] * values.dim()
    shape[0], shape[1], shape[axis] = values.shape[0], values.shape[1], perm.shape[-1]
    index = inverse.reshape(shape).expand(values.shape)
    return torch.gather(values, axis, index)


def _still_switched(attrs: dict, aligned) -> dict:
    """``attrs["label_switched_sites"]`` without the sites that relabelling aligned (the
    sampling checks then cover them; see :mod:`pyromodels.core.diagnostic_warnings`)."""
    if "label_switched_sites" not in attrs:
        return {}
    return {"label_switched_sites": [s for s in attrs["label_switched_sites"] if s not in aligned]}


def relabel(
    posterior,
    site: str = "z",
    component_sites: dict | None = None,
    reference=None,
    num_classes: int | None = None,
) -> Posterior:
    """Align the labels of every draw with one reference labelling (see the module docstring).

    Args:
        posterior: a :class:`~pyromodels.core.Posterior` whose ``samples[site]`` holds labels
            ``(chain, draw, N)``.
        site: the label site.
        component_sites: ``{site_name: axis}`` for the sites indexed by component, ``axis``
            counted in the site's own shape (``{"weights": 0, "locs": 0, "precisions": 0}`` for
            ``locs`` shaped ``(K, D)``); a tuple of axes permutes each of them (a ``(K, K)``
            transition matrix: ``(0, 1)``). Sites not listed are left as they are.
        reference: labels ``(N,)`` to align to; by default the last draw of chain 0 (for a
            chain that has burnt in, a typical configuration of the posterior mode it found).
        num_classes: number of labels ``K``; by default the size of the component axes, or
            ``max label + 1`` when no component site is given.

    Returns:
        A new :class:`Posterior` with ``samples[site]`` renamed and the component sites permuted
        consistently. ``sample_stats``, ``losses`` and ``params`` are carried over unchanged;
        ``diagnostics["relabel_permutations"]`` holds the ``(chain, draw, K)`` permutations
        and ``attrs["relabelled_site"]`` the label site; the aligned sites leave
        ``attrs["label_switched_sites"]``, so the sampling checks cover them again.

    Example:
        >>> import torch
        >>> post = Posterior(
        ...     samples={"z": torch.tensor([[[0, 0, 1], [1, 1, 0]]]),
        ...              "locs": torch.tensor([[[-1.0, 1.0], [1.0, -1.0]]])},
        ...     method="gibbs")
        >>> out = relabel(post, component_sites={"locs": 0})
        >>> out["z"].tolist(), out["locs"].tolist()
        ([[[1, 1, 0], [1, 1, 0]]], [[[1.0, -1.0], [1.0, -1.0]]])
    """
    posterior = check_posterior(posterior)
    if site not in posterior.samples:
        raise ValueError(
            f"site must name a label site; {site!r} is not among {sorted(posterior.samples)}"
        )
    component_sites = {} if component_sites is None else component_sites
    if not isinstance(component_sites, dict):
        raise TypeError(
            f"component_sites must be a dict {{site: axis}}, got {type(component_sites).__name__}"
        )
    z = posterior.samples[site]
    if z.is_floating_point() or z.dtype == torch.bool:
        raise TypeError(f"samples[{site!r}] must hold integer labels, got dtype {z.dtype}")
    axes = {}
    sizes = set()
    for name, spec in component_sites.items():
        if name not in posterior.samples or name == site:
            raise ValueError(
                f"component_sites names {name!r}, which is not a component site of the posterior "
                f"(sites: {sorted(posterior.samples)})"
            )
        values = posterior.samples[name]
        axes[name] = tuple(2 + a for a in _component_axes(name, spec, values.dim() - 2))
        sizes.update(values.shape[a] for a in axes[name])
    if num_classes is None:
        if len(sizes) > 1:
            raise ValueError(
                f"component_sites have component axes of different sizes {sorted(sizes)}"
            )
        num_classes = sizes.pop() if sizes else int(z.max()) + 1
    k = check_int(num_classes, "num_classes", minimum=1)
    bad = {
        name: values
        for name, values in axes.items()
        if any(posterior.samples[name].shape[a] != k for a in values)
    }
    if bad:
        raise ValueError(f"component axes of {sorted(bad)} must have size num_classes = {k}")
    if reference is None:
        reference = z[0, -1]
    perms = hungarian_relabel(z, reference, k)
    samples = dict(posterior.samples)
    samples[site] = perms.gather(-1, z.long()).to(z.dtype)
    for name, name_axes in axes.items():
        values = samples[name]
        for axis in name_axes:
            values = permute_components(values, perms.to(values.device), axis)
        samples[name] = values
    aligned = {site, *axes}
    return Posterior(
        samples=samples,
        method=posterior.method,
        sample_stats=dict(posterior.sample_stats),
        losses=posterior.losses,
        params=dict(posterior.params),
        diagnostics={**posterior.diagnostics, "relabel_permutations": perms},
        attrs={**posterior.attrs, "relabelled_site": site, **_still_switched(posterior.attrs, aligned)},
        model=posterior.model,
        data=posterior.data,
    )
