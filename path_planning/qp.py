# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
A banded convex QP solver with linear inequalities (interior point, no rclpy).

``min 1/2 x' P x + q' x`` subject to ``G x <= h``, with ``P`` symmetric
positive definite and ``P`` and ``G' G`` banded (each row of ``G``
touches a few neighbouring variables, as the offsets and curvatures of a
line do). Mehrotra's predictor-corrector primal-dual interior-point
method (Nocedal and Wright, Numerical Optimization, ch. 16.6): each
iteration factorises the banded matrix ``P + G' diag(z / s) G`` (LAPACK
``dpbtrf``, O(n) for a fixed band) and solves it twice (the affine step,
then the centred and corrected one); the step keeps 99 % of the way to
the boundary of ``s, z >= 0``. It converges in 10-30 iterations whatever
the conditioning (the lane line's curvature rows are second differences:
ADMM needed hundreds to thousands of iterations there).

:class:`BandedQP` keeps ``P``, ``q`` and ``G`` as small dense stencils
(each row's few columns and values), so one iteration is a fixed number
of numpy operations on arrays of length n or m; the bounds ``h`` change
from solve to solve (the lane line's body check tightens them).
Deterministic: the same inputs give the same result. Used by
:mod:`path_planning.lane_line`.
"""

from dataclasses import dataclass
import math
from typing import Any, Tuple

import numpy as np
from scipy import sparse
from scipy.linalg.lapack import dpbtrf, dpbtrs
from scipy.sparse.linalg import splu

#: a wider band (a closed loop's wrap-around) is factorised as a sparse matrix
SPARSE_BAND = 16


@dataclass
class QPResult:
    """
    The solution of :meth:`BandedQP.solve`.

    ``x`` (n,) the variables; ``iterations`` used; ``converged`` within
    the tolerance; ``gap`` the final mean complementarity ``s' z / m``;
    ``primal`` the largest violation of ``G x <= h`` (<= 0 when met).
    """

    x: np.ndarray
    iterations: int
    converged: bool
    gap: float
    primal: float


def stencil(mat: sparse.spmatrix) -> Tuple[np.ndarray, np.ndarray]:
    """
    Return a sparse matrix's rows as ``(cols, vals)`` (m, k) stencils.

    Each row's columns and values, padded to the longest row with value
    0 at the row's first column (so no band is widened).
    """
    csr = sparse.csr_matrix(mat)
    csr.sum_duplicates()
    csr.sort_indices()
    counts = np.diff(csr.indptr)
    width = max(int(counts.max(initial=0)), 1)
    cols = np.zeros((csr.shape[0], width), np.int64)
    vals = np.zeros((csr.shape[0], width))
    pos = np.arange(csr.nnz) - np.repeat(csr.indptr[:-1], counts)
    rows = np.repeat(np.arange(csr.shape[0]), counts)
    cols[rows, pos] = csr.indices
    vals[rows, pos] = csr.data
    first = np.where(counts > 0, cols[:, 0], 0)
    pad = np.arange(width)[None, :] >= counts[:, None]
    return np.where(pad, first[:, None], cols), vals


class _Gram:
    """
    ``M' diag(w) M`` of a stencil matrix (each unordered pair of a row's entries once).

    :meth:`band` gives it in LAPACK's upper band storage (flat); the pairs
    (``lo``, ``hi`` columns, ``val``, ``row``) also build a sparse matrix.
    """

    def __init__(self, cols: np.ndarray, vals: np.ndarray, n: int, band: int) -> None:
        k = cols.shape[1]
        ia, ib = np.triu_indices(k)
        ca, cb = cols[:, ia], cols[:, ib]
        self.lo, self.hi = np.minimum(ca, cb).ravel(), np.maximum(ca, cb).ravel()
        self.val = (vals[:, ia] * vals[:, ib]).ravel()
        self.idx = (band + self.lo - self.hi) * n + self.hi
        self.row = np.repeat(np.arange(cols.shape[0]), ia.size)
        self.size = (band + 1) * n

    def band(self, w: np.ndarray) -> np.ndarray:
        """Return the flat band of ``M' diag(w) M`` for row weights ``w``."""
        return np.bincount(self.idx, weights=self.val * w[self.row], minlength=self.size)


def _spread(cols: np.ndarray) -> int:
    return int(np.max(cols.max(axis=1) - cols.min(axis=1), initial=0)) if cols.size else 0


class BandedQP:
    """
    ``min |R x + r|^2 + reg |x|^2`` with ``G x <= h``, for changing ``h``.

    A least-squares objective (``P = 2 (R' R + reg I)``, ``q = 2 R' r``,
    positive definite for ``reg`` > 0), ``R`` (k, n) and ``G`` (m, n)
    given as row stencils (:func:`stencil`: each row's columns and
    values). See the module doc. Raises ``ValueError`` for inconsistent
    shapes or non-finite input.
    """

    def __init__(self, r_cols: np.ndarray, r_vals: np.ndarray, r_vec: np.ndarray,
                 g_cols: np.ndarray, g_vals: np.ndarray, n: int, reg: float = 1e-9) -> None:
        if r_cols.shape != r_vals.shape or g_cols.shape != g_vals.shape \
                or r_vec.shape != (r_cols.shape[0],):
            raise ValueError('BandedQP: stencil shapes do not fit')
        if not (np.isfinite(r_vals).all() and np.isfinite(r_vec).all()
                and np.isfinite(g_vals).all() and reg > 0.0):
            raise ValueError('BandedQP: non-finite R, r or G, or reg <= 0')
        if (r_cols.size and (r_cols.min() < 0 or r_cols.max() >= n)) or \
                (g_cols.size and (g_cols.min() < 0 or g_cols.max() >= n)):
            raise ValueError('BandedQP: a column index is out of range')
        self.n, self.m = int(n), int(g_cols.shape[0])
        self.r_cols, self.r_vals = r_cols, r_vals
        self.g_cols, self.g_vals = g_cols, g_vals
        self.reg = float(reg)
        band = max(_spread(r_cols), _spread(g_cols))
        # a closed loop's rows join its last variables to its first: a sparse
        # factorisation instead of the band (which would be the whole matrix)
        self.sparse = band > SPARSE_BAND
        if self.sparse:
            band = 0
        self.band = band
        self.q = 2.0 * self._mt(r_cols, r_vals, r_vec)
        gram_r = _Gram(r_cols, r_vals, n, band)
        self.gram_g = _Gram(g_cols, g_vals, n, band)
        if self.sparse:
            # P + G' W G as a sparse matrix: P's pairs, G's pairs, the diagonal
            gg = self.gram_g
            self._base_val = np.concatenate([2.0 * gram_r.val, np.full(n, 2.0 * reg)])
            lo = np.concatenate([gram_r.lo, np.arange(n), gg.lo])
            hi = np.concatenate([gram_r.hi, np.arange(n), gg.hi])
            off = lo != hi
            self._rows = np.concatenate([lo, hi[off]])
            self._cols = np.concatenate([hi, lo[off]])
            self._off = off
            self._n_base = self._base_val.size
        else:
            self.base = 2.0 * gram_r.band(np.ones(r_cols.shape[0]))
            self.base[band * n:] += 2.0 * reg

    def _mt(self, cols: np.ndarray, vals: np.ndarray, z: np.ndarray) -> np.ndarray:
        return np.bincount(cols.ravel(), weights=(vals * z[:, None]).ravel(), minlength=self.n)

    def _px(self, x: np.ndarray) -> np.ndarray:
        rx = (self.r_vals * x[self.r_cols]).sum(axis=1)
        return 2.0 * (self._mt(self.r_cols, self.r_vals, rx) + self.reg * x)

    def _gx(self, x: np.ndarray) -> np.ndarray:
        return (self.g_vals * x[self.g_cols]).sum(axis=1)

    def _gtz(self, z: np.ndarray) -> np.ndarray:
        return self._mt(self.g_cols, self.g_vals, z)

    def _factor(self, w: np.ndarray) -> Tuple[Any, bool]:
        if self.sparse:
            gg = self.gram_g
            val = np.concatenate([self._base_val, gg.val * w[gg.row]])
            val = np.concatenate([val, val[self._off]])
            mat = sparse.csc_matrix((val, (self._rows, self._cols)), shape=(self.n, self.n))
            try:
                return splu(mat), True
            except RuntimeError:
                return None, False
        mat = self.base + self.gram_g.band(w)
        fac, info = dpbtrf(mat.reshape(self.band + 1, self.n))
        return fac, info == 0

    def _solve(self, fac: Any, rhs: np.ndarray) -> np.ndarray:
        if self.sparse:
            return fac.solve(rhs)
        return dpbtrs(fac, rhs)[0]

    def solve(self, h: np.ndarray, eps: float = 1e-7, max_iter: int = 40) -> QPResult:
        """
        Return the minimum for the bounds ``h`` (m,) (finite).

        Stops when the dual and primal residuals (relative to the data's
        size) and the mean complementarity are below ``eps``, or after
        ``max_iter`` iterations (the last iterate, ``converged`` False).
        """
        m = self.m
        h = np.asarray(h, dtype=np.float64)
        if h.shape != (m,) or not np.isfinite(h).all():
            raise ValueError(f'BandedQP.solve: h must be ({m},) and finite')
        q = self.q
        fac, ok = self._factor(np.zeros(m))
        if not ok:
            raise ValueError('BandedQP: P is not positive definite')
        x = self._solve(fac, -q)
        if m == 0:
            return QPResult(x, 0, True, 0.0, 0.0)
        gx = self._gx(x)
        s = np.maximum(h - gx, 1.0)
        z = np.ones(m)
        scale = 1.0 + max(float(np.max(np.abs(q), initial=0.0)), float(np.max(np.abs(h))))
        mu = math.inf
        tol = eps * scale
        for it in range(1, max_iter + 1):
            r_d = self._px(x) + q + self._gtz(z)
            r_p = gx + s - h
            mu = float(s @ z) / m
            if mu <= eps and float(np.max(np.abs(r_d))) <= tol \
                    and float(np.max(np.abs(r_p))) <= tol:
                return QPResult(x, it - 1, True, mu, float(np.max(gx - h)))
            w = z / s
            fac, ok = self._factor(w)
            if not ok:
                break
            base = -r_d - self._gtz(w * r_p)
            # affine step, then the centred and corrected one (same factor)
            r_c = s * z
            dx = self._solve(fac, base + self._gtz(z))
            gdx = self._gx(dx)
            dz = w * (gdx + r_p) - z
            ds = -(r_c + s * dz) / z
            a_aff = _step(s, ds, z, dz)
            mu_aff = float((s + a_aff * ds) @ (z + a_aff * dz)) / m
            sigma = (mu_aff / mu) ** 3 if mu > 0.0 else 0.0
            r_c = r_c + ds * dz - sigma * mu
            dx = self._solve(fac, base + self._gtz(r_c / s))
            gdx = self._gx(dx)
            dz = w * (gdx + r_p) - r_c / s
            ds = -(r_c + s * dz) / z
            alpha = 0.99 * _step(s, ds, z, dz)
            x = x + alpha * dx
            gx = gx + alpha * gdx
            s = np.maximum(s + alpha * ds, 1e-14)
            z = np.maximum(z + alpha * dz, 1e-14)
        return QPResult(x, max_iter, False, mu, float(np.max(self._gx(x) - h)))


def _step(s: np.ndarray, ds: np.ndarray, z: np.ndarray, dz: np.ndarray) -> float:
    """Return the longest step in (0, 1] keeping ``s + a ds >= 0`` and ``z + a dz >= 0``."""
    v = np.concatenate([s, z])
    dv = np.concatenate([ds, dz])
    ratio = np.where(dv < 0.0, -v / np.minimum(dv, -1e-300), np.inf)
    return min(1.0, float(ratio.min()))
