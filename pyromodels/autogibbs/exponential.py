"""Conjugate updates read off the model's log density.

The log full conditional of a site whose prior is an exponential family, with children that
make it conjugate, is linear in the family's sufficient statistics ``T(x)``:
``log p(x | rest) = c . T(x) + const``. Evaluating the model's log density at ``p + 1`` values of
the site gives ``c`` and the constant by one linear solve (batched over the elements when the
site sits in a plate); one more value checks the linearity. A failed check means the site is
not conjugate in this model. The posterior's parameters follow from ``c``:

======================  ====================  ===========================================
prior                   ``T(x)``              posterior from ``c``
======================  ====================  ===========================================
Beta                    log x, log(1 - x)     Beta(c_0 + 1, c_1 + 1)
Gamma (shape, rate)     log x, x              Gamma(c_0 + 1, -c_1)
Exponential (rate)      log x, x              Gamma(c_0 + 1, -c_1)
InverseGamma            log x, 1 / x          InverseGamma(-c_0 - 1, -c_1)
Normal                  x, x^2                Normal(-c_0 / (2 c_1), (-2 c_1)^(-1/2))
Dirichlet               log x_1..log x_D      Dirichlet(c + 1)
MultivariateNormal      x, x_i x_j (i <= j)   precision P = -(C + C^T) (C: the upper
                                              triangle of the x_i x_j coefficients),
                                              mean P^-1 c_x
Wishart (precision)     log |L|, L_ij         Wishart(2 c_0 + d + 1, S^-1), S = -(C + C^T)
                        (i <= j)              (C: the upper triangle of the L_ij
                                              coefficients)
======================  ====================  ===========================================

The children that make each prior conjugate, all read off the same way (a parameter gathered
by a discrete index, ``locs[z]``, or seen through a known affine map, ``a + b * theta``, keeps
the conditional linear in the same statistics):

======================  ======================================================================
prior                   children
======================  ======================================================================
Beta                    Bernoulli, Binomial, Geometric (the success probability)
Gamma, Exponential      Poisson, Exponential, Gamma of known shape (the rate); Normal of known
                        mean (the precision, ``scale = tau ** -0.5``)
InverseGamma            Normal of known mean (the variance, ``scale = v ** 0.5``)
Normal                  Normal of known scale (the mean, also through ``a + b * theta`` and as
                        the mean of other Normal sites)
Dirichlet               Categorical, Multinomial (the probabilities)
MultivariateNormal      MultivariateNormal of known covariance (the mean)
Wishart                 MultivariateNormal of known mean (the precision matrix, also scaled:
                        ``precision_matrix = k * L``, and through ``scale_tril`` of its
                        inverse); gathered by a discrete index (a mixture's ``L[z]``)
======================  ======================================================================

**Elements that do not separate by plate.** When each element's terms sit in the site's own
plate, every element is moved to the same point at once and each element's terms are read
back. A parameter gathered by a discrete index (``locs[z]``, Dawid-Skene's confusion rows
``conf[worker, z]``) puts several elements into one term, so the terms do not say which element
they belong to; the fallback moves one element at a time (``elements x (p + 2)`` evaluations of
the log joint). Before that, the coefficients of all elements are read at once from gradients:

* If the log joint, as a function of all elements together, is additive over them,
  ``log p(x) = sum_e c_e . T(x_e) + const``, then its gradient with respect to element ``e``
  at a point where every element sits at ``x`` is ``J_T(x)^T c_e``: one backward pass gives
  an equation per coordinate of every element, with the constant gone. The family's first
  ``k`` fitting points (the fewest whose derivatives identify the ``p`` coefficients: ``k = 2``
  for the scalar families and the Dirichlet, ``d + 1`` for a ``d``-dimensional
  MultivariateNormal) give ``A c_e = g_e`` with one small design ``A`` (``k q x p``) shared by
  all elements, solved by least squares for all elements at once.
* On the simplex (Dirichlet) only derivatives along it mean anything: a Categorical or
  Multinomial child normalises its probabilities, so off the simplex the log joint gains a term
  in ``sum_j x_j`` whose gradient adds an unknown multiple of ``(1, ..., 1)``. The derivatives
  are therefore read along the tangent directions ``e_j - e_D`` only (``D - 1`` equations per
  point), and two points identify the ``D`` coefficients (``c . log x`` along the simplex
  determines ``c``).
* Probing every element together at ``p + 1`` joint values would give only the sum over the
  elements of their log conditionals, so values alone cannot separate them; they serve as the
  check instead. The site is set to one more joint value, every element at its own random
  convex combination of the family's points (inside the support, which is convex; a fixed
  seed, so the chain's random stream is untouched), and ``log p(x') - log p(x_0)`` must equal
  ``sum_e c_e . (T(x'_e) - T(x_0))`` to the module's tolerance. That checks linearity and
  additivity (conditional independence of the elements given the rest) at once: elements
  coupled through a term (two means seen through their sum) fit a wrong quadratic along the
  diagonal, which the check refuses.
* The gradient points and the check point are scored in one batched run where the site's
  values batch (else one run each). A program autograd cannot follow (a NumPy conversion
  raises; ``.item()`` or ``detach`` lose the gradient, and the check fails), a missing or
  non-finite gradient, or a failed check falls back to the
  element-by-element fit, and the reason is kept for the site (per program and argument
  shapes) and shown in its plan line, so later sweeps go straight to the fallback.
"""

from __future__ import annotations

import torch

from ..core.seeding import make_generator
from .families import FAMILIES, Family, directions, family_of, unwrap
from .trace import (
    compiled_update,
    element_index,
    element_log_density,
    log_joint,
    log_joints,
    log_joints_and_gradients,
    site_choice,
    tolerance,
)

__all__ = ["FAMILIES", "Family", "family_of", "unwrap", "posterior_params", "recorded_params",
           "ConjugateUpdate", "NotConjugate"]


class NotConjugate(ValueError):
    """The site's log conditional is not linear in its prior's sufficient statistics."""


def _element_values(model, args, kwargs, state, site, points, batch_shape, event_shape):
    """``(m, *batch_shape)`` log densities at each point, every element set to the same point
    when the elements separate by plate (else ``None``)."""
    value = state[site]
    full = [p.to(value.dtype).expand(tuple(batch_shape) + tuple(event_shape)).clone() for p in points]
    return element_log_density(model, args, kwargs, state, site, full, batch_shape)


def _one_by_one_values(model, args, kwargs, state, site, points, batch_shape):
    """``(m, *batch_shape)`` log joints at each point, one element changed at a time."""
    value = state[site]
    values = []
    for flat in range(max(1, batch_shape.numel())):
        index = element_index(flat, batch_shape)
        for p in points:
            v = value.clone()
            v[index] = p.to(value.dtype)
            values.append(v)
    out = log_joints(model, args, kwargs, state, site, values)  # element-major, point-minor
    return out.reshape(tuple(batch_shape) + (len(points),)).movedim(-1, 0)


def _solve(family, points, y, site, dtype):
    """``(elements, p)`` coefficients from the log densities ``y`` ``(p + 2, ...)`` at the
    family's points, the last one checking the linearity (``(p + 1, ...)``: no check)."""
    phi = torch.cat([family.features(points), torch.ones(len(points), 1, dtype=torch.float64,
                                                         device=points.device)], -1)
    m = phi.shape[1]
    flat = y.reshape(len(points), -1)
    coef = torch.linalg.solve(phi[:m], flat[:m])               # (p + 1, elements)
    if len(points) == m:
        return coef[:-1].T
    predicted = phi[m:] @ coef
    scale = 1.0 + flat.abs().amax(0)
    if not bool(((predicted - flat[m:]).abs() <= tolerance(dtype) * scale).all()):
        raise NotConjugate(f"site {site!r}: its log conditional is not linear in the sufficient "
                           f"statistics of a {family.name} prior")
    return coef[:-1].T


#: (family name, event shape, device) -> (A, k) of :func:`_gradient_design`
_DESIGNS: dict = {}


def _gradient_design(family, points, event_shape, ref):
    """``(A, k)``: the first ``k`` solve points whose derivatives identify the ``p``
    coefficients, and ``A`` ``(k q, p)``: the derivative of ``T`` along each direction at each
    of them (point-major), so that the log density's derivatives there are ``A c`` (kept per
    family, event shape and device)."""
    key = (family.name, tuple(event_shape), str(ref.device))
    if key not in _DESIGNS:
        _DESIGNS[key] = _new_design(family, points, event_shape, ref)
    return _DESIGNS[key]


def _new_design(family, points, event_shape, ref):
    along = directions(family, event_shape, ref)
    rows = []
    for k, point in enumerate(points[:-1], start=1):
        jac = torch.autograd.functional.jacobian(family.features, point.to(torch.float64))
        rows.append((jac.reshape(jac.shape[0], -1) @ along).T)   # (q, p)
        design = torch.cat(rows)
        if int(torch.linalg.matrix_rank(design)) == design.shape[1]:
            return design, k
    return None, 0


def _check_point(points, batch_shape, event_shape, ref):
    """A value of the site with every element at its own random convex combination of the
    family's points (in the support, which is convex), from a fixed seed."""
    gen = torch.Generator().manual_seed(0)
    count = max(1, batch_shape.numel())
    weights = torch.rand(count, len(points), generator=gen, dtype=torch.float64).to(ref.device)
    weights = weights / weights.sum(-1, keepdim=True)
    mixed = weights @ points.reshape(len(points), -1)
    return mixed.reshape(tuple(batch_shape) + tuple(event_shape))


def _gradients_at_points(model, args, kwargs, state, site, points, batch_shape, event_shape, extra=()):
    """The log joints and their gradients with every element of ``site`` at each of
    ``points`` in turn (then at each value of ``extra``)."""
    value = state[site]
    full = tuple(batch_shape) + tuple(event_shape)
    values = [p.to(value.dtype).expand(full).clone() for p in points] + list(extra)
    return log_joints_and_gradients(model, args, kwargs, state, site, values)


def _least_squares(design, grads, family, batch_shape, event_shape, value):
    """``(E, p)`` coefficients solving ``A c_e = g_e`` for every element at once."""
    count = max(1, batch_shape.numel())
    along = grads.reshape(grads.shape[0], count, -1) @ directions(family, event_shape, value)
    rhs = along.permute(0, 2, 1).reshape(-1, count)                             # (k q, E)
    # least squares by the normal equations, their products written out: LAPACK's least
    # squares is not reproducible to the last bit from run to run, and a chain must be
    gram = (design[:, :, None] * design[:, None, :]).sum(0)
    return torch.linalg.solve(gram, (design[:, :, None] * rhs[:, None, :]).sum(0)).T   # (E, p)


def _gradient_solve(model, args, kwargs, state, site, family, points, batch_shape, event_shape):
    """``(coefficients, finite)`` from the gradients at the design's points, no check point
    and no decision on values (for a recorded update); ``finite`` is a boolean tensor.
    Raises :class:`NotConjugate` where the design or autograd gives nothing to solve."""
    value = state[site]
    design, k = _gradient_design(family, points, event_shape, value)
    if design is None:
        raise NotConjugate(f"site {site!r}: the derivatives do not identify the coefficients")
    try:
        _, grads = _gradients_at_points(model, args, kwargs, state, site, points[:k], batch_shape,
                                        event_shape)
    except Exception as err:  # noqa: BLE001 - any failure of autograd means "not this way"
        raise NotConjugate(f"site {site!r}: autograd failed ({type(err).__name__})") from err
    if grads is None:
        raise NotConjugate(f"site {site!r}: autograd gave no gradient")
    grads = grads[:k].to(torch.float64)
    coef = _least_squares(design, grads, family, batch_shape, event_shape, value)
    return coef, torch.isfinite(grads).all()


def _gradient_coefficients(model, args, kwargs, state, site, family, points, batch_shape, event_shape,
                           checked: bool = True):
    """``((elements, p) coefficients, "")`` of every element at once from the log joint's
    gradients, or ``(None, why not)``; see the module docs. Without ``checked`` the joint check
    point is neither scored nor compared."""
    value = state[site]
    design, k = _gradient_design(family, points, event_shape, value)
    if design is None:
        return None, "the derivatives at the points do not identify the coefficients"
    check = _check_point(points, batch_shape, event_shape, value)
    extra = [check.to(value.dtype)] if checked else []
    try:
        joints, grads = _gradients_at_points(model, args, kwargs, state, site, points[:k],
                                             batch_shape, event_shape, extra)
    except Exception as err:  # noqa: BLE001 - any failure of autograd means "not this way"
        return None, f"autograd failed ({type(err).__name__})"
    if grads is None:
        return None, "autograd gave no gradient"
    grads = grads[:k].to(torch.float64)
    if not bool(torch.isfinite(grads).all()):
        return None, "autograd gave a non-finite gradient"
    coef = _least_squares(design, grads, family, batch_shape, event_shape, value)
    if not checked:
        return coef, ""
    count = max(1, batch_shape.numel())
    moved = family.features(check.reshape((count,) + tuple(event_shape)).to(torch.float64)) \
        - family.features(points[:1].to(torch.float64))
    predicted = (coef * moved).sum()
    actual = joints[-1] - joints[0]
    scale = 1.0 + joints[-1].abs() + joints[0].abs()
    if not bool((predicted - actual).abs() <= tolerance(value.dtype) * scale):
        return None, "the joint check failed: the elements are coupled or not linear"
    return coef, ""


def _coefficients(model, args, kwargs, state, site, family, batch_shape, event_shape, checked=True):
    """``(elements, p)`` coefficients: by plate, else from gradients, else element by element;
    without ``checked``, the linearity check's point is left out."""
    points = family.points(event_shape, state[site])
    if not checked:
        points = points[:-1]
    dtype = state[site].dtype
    y = _element_values(model, args, kwargs, state, site, list(points), batch_shape, event_shape)
    if y is not None:
        return _solve(family, points, y, site, dtype)
    choice = site_choice(model, site, args, kwargs)
    why = choice.gradient_failed if choice is not None else ""
    if not why:
        coef, why = _gradient_coefficients(model, args, kwargs, state, site, family,
                                           family.points(event_shape, state[site]), batch_shape,
                                           event_shape, checked)
        if coef is not None:
            if choice is not None:
                choice.note = (f"coefficients of all {max(1, batch_shape.numel())} elements from "
                               f"gradients, checked at a joint point")
            return coef
        if choice is not None:
            choice.gradient_failed = why
            choice.note = f"coefficients element by element (not from gradients: {why})"
    y = _one_by_one_values(model, args, kwargs, state, site, list(points), batch_shape)
    return _solve(family, points, y, site, dtype)


def recorded_params(model, args, kwargs, state: dict, site: str, fn) -> dict:
    """The posterior parameters of ``site`` as :func:`posterior_params` reads them after its
    first sweep (no check point), with no decision on values, for a recorded update: by plate
    where the elements separate (every term not constant by shape kept), else from the log
    joint's gradients. Beside the parameters, ``"ok"``: a boolean tensor, false where the
    gradients were not finite or the parameters not a proper posterior (the caller then takes
    the plain path, which falls back or raises). Raises :class:`NotConjugate` where neither
    way applies (the coefficients are read element by element)."""
    family = family_of(fn)
    batch_shape, event_shape = unwrap(fn).batch_shape, unwrap(fn).event_shape
    value = state[site]
    points = family.points(event_shape, value)
    full = [p.to(value.dtype).expand(tuple(batch_shape) + tuple(event_shape)).clone() for p in points[:-1]]
    y = element_log_density(model, args, kwargs, state, site, full, batch_shape, skip_unchanged=False)
    if y is not None:
        coef, ok = _solve(family, points[:-1], y, site, value.dtype), torch.ones((), dtype=torch.bool)
    else:
        choice = site_choice(model, site, args, kwargs)
        if choice is None or choice.gradient_failed:
            raise NotConjugate(f"site {site!r}: its coefficients are read element by element")
        coef, ok = _gradient_solve(model, args, kwargs, state, site, family, points, batch_shape,
                                   event_shape)
    params = family.params(coef.reshape(tuple(batch_shape) + (coef.shape[-1],)))
    return {**params, "ok": ok & family.valid(params).all()}


def posterior_params(model, args, kwargs, state: dict, site: str, fn, checked: bool = True) -> dict:
    """The posterior parameters of ``site`` given the rest of ``state``, read off the model.

    Args:
        model: the Pyro program; ``args``, ``kwargs``: its arguments.
        state: a value of every latent site.
        site: the site's name; ``fn``: its prior distribution (from a trace).
        checked: check the linearity at one more value of the site (a joint point for
            coefficients read from gradients); the updates skip it after their first sweep.

    Raises:
        NotConjugate: the log density is not linear in the sufficient statistics (or the
            coefficients do not give a proper posterior).
    """
    family = family_of(fn)
    if family is None:
        raise NotConjugate(f"site {site!r}: {type(fn).__name__} prior is not a supported family")
    batch_shape, event_shape = unwrap(fn).batch_shape, unwrap(fn).event_shape
    coef = _coefficients(model, args, kwargs, state, site, family, batch_shape, event_shape, checked)
    params = family.params(coef.reshape(tuple(batch_shape) + (coef.shape[-1],)))
    if not bool(family.valid(params).all()):
        raise NotConjugate(f"site {site!r}: the {family.name} coefficients read off the model do "
                           f"not give a proper posterior")
    return params


class ConjugateUpdate:
    """The conjugate update of one site (a picklable callable for a
    :class:`~pyromodels.core.GibbsBlock`).

    Args:
        model: the Pyro program.
        site: the site's name.
        fn: its prior distribution (from a trace; gives the family and shapes).
        verify: on the first call, check the update by :meth:`check` and raise a
            ``RuntimeError`` naming the site when it fails, and check the linearity of its
            log conditional (see :func:`posterior_params`); later calls trust both, as the
            plan did at the traced state.

    After the first call, where the plan built a statistics table for the site
    (:mod:`.tables`), the coefficients come from it without running the program. Otherwise,
    where they are read by plate or from gradients (on the
    CPU, where the tracer records autograd's backward pass), the parameters come from
    :func:`recorded_params` through a recorded trace of the whole computation
    (:func:`~.trace.compiled_update`), checked bit for bit against the plain call.
    """

    def __init__(self, model, site: str, fn, verify: bool = True):
        self.model, self.site, self.fn, self.verify = model, site, fn, verify
        self.recordable = None  # whether recorded_params applies (found at the first unchecked call)
        self.table = None  # a statistics table (see .tables), set by the plan where one applies

    def __call__(self, state: dict, data, generator: torch.Generator) -> dict:
        draw = family_of(self.fn).sample(self.params(state, data), generator)
        return {self.site: draw.to(state[self.site].dtype)}

    def params(self, state: dict, data) -> dict:
        """The posterior parameters of the site given the rest of ``state`` (checked at the
        first call when ``verify``; from a recorded trace once one is verified)."""
        checked = self.verify
        if self.verify:
            own = make_generator(0, state[self.site].device)  # leaves the chain's stream alone
            if not self.check(state, data.args, data.kwargs, own):
                raise RuntimeError(f"site {self.site!r}: its conjugate update failed condition-and-"
                                   f"score at the first sweep; pass your own block in overrides=")
            self.verify = False
        if not checked and self.table is not None and self.table.data.same(data.args, data.kwargs):
            params = self._from_table(state)
            if params is not None:
                return params
        try:
            params = None if checked else self._recorded(state, data)
            if params is None:
                params = posterior_params(self.model, data.args, data.kwargs, state, self.site,
                                          self.fn, checked)
        except NotConjugate as err:
            raise RuntimeError(f"automatic conjugate update failed: {err}") from err
        return params

    def _from_table(self, state: dict) -> dict | None:
        """The parameters from the statistics table, or ``None`` where they are not a proper
        posterior (the program is read then, and raises if it agrees)."""
        family, batch = family_of(self.fn), tuple(unwrap(self.fn).batch_shape)
        coef = self.table.coefficients(state)
        params = family.params(coef.reshape(batch + (coef.shape[-1],)))
        return params if bool(family.valid(params).all()) else None

    def _recorded(self, state: dict, data) -> dict | None:
        """The parameters by :func:`recorded_params` (from a recorded trace once verified), or
        ``None`` where it does not apply or its ``ok`` is false (the plain path then)."""
        if self.recordable is False:
            return None
        if self.recordable is None and any(v.device.type != "cpu" for v in state.values()):
            self.recordable = False  # off the CPU the backward pass runs on another thread
            return None
        args, kwargs = data.args, data.kwargs
        try:
            if self.recordable is None:  # the first time, plainly: does it apply?
                params = recorded_params(self.model, args, kwargs, state, self.site, self.fn)
            else:
                params = compiled_update(self.model, args, kwargs, state, ("conjugate", self.site),
                                         lambda s: recorded_params(self.model, args, kwargs, s,
                                                                   self.site, self.fn))
        except NotConjugate:
            self.recordable = False
            return None
        self.recordable = True
        params = dict(params)
        return params if bool(params.pop("ok")) else None

    def check(self, state: dict, args, kwargs, generator: torch.Generator) -> bool:
        """Condition-and-score at two draws of the update: the posterior's log density minus
        the model's log joint must not change."""
        params = posterior_params(self.model, args, kwargs, state, self.site, self.fn)
        family = family_of(self.fn)
        diffs, sizes = [], []
        for _ in range(2):
            x = family.sample(params, generator).to(state[self.site].dtype)
            own = family.make(params).log_prob(x).sum().to(torch.float64)
            joint = log_joint(self.model, args, kwargs, {**state, self.site: x}).to(torch.float64)
            diffs.append(float(own - joint))
            sizes.append(abs(float(joint)))
        return abs(diffs[0] - diffs[1]) <= 10 * tolerance(state[self.site].dtype) * (1.0 + max(sizes))
