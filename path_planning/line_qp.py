# Copyright 2026 carla_hil developers
# SPDX-License-Identifier: Apache-2.0
"""
The least-curvature line's QP: offsets along a reference, the curvature limited.

Pure numpy/scipy (no rclpy); used by :mod:`path_planning.lane_line` (lap
1's open line through the lane seen so far) and
:mod:`path_planning.raceline` (lap 2's closed line round the map).
Stations ``r_i`` every ``h`` m on a reference with signed curvature
``k0_i`` and left normals ``n_i``; the line is ``p_i = r_i + a_i n_i``.
To first order its curvature is linear in the offsets,
``kappa_i = k0_i + (a_{i-1} - 2 a_i + a_{i+1}) / h^2 + k0_i^2 a_i`` (the
last term: an arc further out is longer, so its curvature falls). The
QP (:class:`path_planning.qp.BandedQP`) minimises ``sum kappa_i^2 +
smoothness sum (d kappa / ds)^2 + centre_weight sum a_i^2 (+ the pull to
a previous line)`` under ``lo_i <= a_i <= hi_i`` and ``|kappa_i| <=
k_lim`` (with a heavily penalised excess, so it is always feasible).
"""

import math
from typing import Optional, Tuple

import numpy as np
from path_planning.qp import BandedQP


class LineQP:
    """
    A line's QP for :class:`path_planning.qp.BandedQP`, variables interleaved.

    Stations ``r_i`` with left normals, offsets ``a_i`` (the line is ``r_i
    + a_i n_i``). Open (the lane line): ``fixed`` the first offsets (the
    start: position, heading and curvature), variables ``a_F, e_F,
    a_{F+1}, ..., a_{n-1}``; closed (a whole lap): every ``a_i, e_i``,
    indices round the loop. ``e_j`` the excess of station ``j``'s
    curvature over the limit (penalised: the limit holds where it can,
    and the problem is always feasible). Interleaving keeps every matrix
    banded (closed: but for the corner that joins the loop).
    """

    def __init__(self, n: int, h: float, k0: np.ndarray, fixed: np.ndarray,
                 k_lim: float, centre_weight: float = 1e-4, smoothness: float = 0.5,
                 open_end: bool = False, prev: Optional[np.ndarray] = None,
                 keep_weight: float = 0.0, closed: bool = False,
                 start_kappa: Optional[float] = None, start_weight: float = 0.0) -> None:
        self.n = n
        f = 0 if closed else len(fixed)
        self.fixed = np.zeros(0) if closed else fixed
        self.ia = 2 * (np.arange(f, n) - f)
        # h^2 kappa_j = a_{j-1} - (2 - h^2 k0_j^2) a_j + a_{j+1} + h^2 k0_j
        j = np.arange(n) if closed else np.arange(1, n - 1)
        idx = np.column_stack([j - 1, j, j + 1]) % n
        coef = np.column_stack([np.ones(j.size), -2.0 + h * h * k0[j] ** 2, np.ones(j.size)])
        c_cols, c_vals, const = self._rows(idx, coef, h * h * k0[j])
        # its change from station to station
        jd = j if closed else j[:-1]
        nxt = (np.arange(j.size) + 1) % j.size
        a_c, b_c = coef[:jd.size], coef[nxt[:jd.size]]
        d_cols, d_vals, d_const = self._rows(
            np.column_stack([jd - 1, jd, jd + 1, jd + 2]) % n,
            np.column_stack([-a_c[:, 0], b_c[:, 0] - a_c[:, 1], b_c[:, 1] - a_c[:, 2],
                             b_c[:, 2]]),
            h * h * (k0[(jd + 1) % n] - k0[jd]))
        # stations with a curvature limit and their excess variable
        # (open: from the first station with a free offset in its row: else
        # the one station without a limit takes every excess, a kink at the car)
        j0 = max(f - 1, 1)
        je = np.arange(n) if closed else np.arange(j0, n - 1)
        ie = 2 * (np.maximum(je, f) - f) + 1     # station f - 1 shares e_f
        nv = 2 * n if closed else 2 * (n - f) - 1
        rows = je if closed else je - 1          # their curvature rows
        w_a = math.sqrt(centre_weight) * h * h
        w_d = math.sqrt(smoothness) / h
        r_cols = [_pad(c_cols, 4), _pad(d_cols, 4), np.repeat(self.ia[:, None], 4, 1),
                  np.repeat(ie[:, None], 4, 1)]
        r_vals = [_pad(c_vals, 4), w_d * d_vals, _first(np.full(n - f, w_a), 4),
                  _first(np.full(je.size, 100.0 * h * h), 4)]
        r_vec = [const, w_d * d_const, np.zeros(n - f), np.zeros(je.size)]
        if start_kappa is not None and not closed and start_weight > 0.0:
            # the first station's curvature near the start's (the car's steering)
            r_cols.append(_pad(c_cols[:1], 4))
            r_vals.append(start_weight * _pad(c_vals[:1], 4))
            r_vec.append(start_weight * (const[:1] - h * h * float(start_kappa)))
        if prev is not None:
            # stay near the last line where it is known (consistency)
            i = np.flatnonzero(np.isfinite(prev[f:]))
            if i.size:
                r_cols.append(np.repeat(self.ia[i][:, None], 4, 1))
                r_vals.append(_first(np.full(i.size, keep_weight * h * h), 4))
                r_vec.append(-keep_weight * h * h * prev[f:][i])
        if open_end:
            r_cols.append(np.array([[self.ia[-1], self.ia[-2], self.ia[-2], self.ia[-2]]]))
            r_vals.append(np.array([[10.0, -10.0, 0.0, 0.0]]))
            r_vec.append(np.zeros(1))
        # G x <= h: a_i <= hi_i, -a_i <= -lo_i, +-kappa_j - e_j <= k_lim
        box_c = np.repeat(self.ia[:, None], 4, 1)
        lim_c = np.column_stack([_pad(c_cols, 3)[rows], ie])
        e_col = np.full((je.size, 1), -h * h)
        g_cols = np.vstack([box_c, box_c, lim_c, lim_c])
        lim_v = _pad(c_vals, 3)[rows]
        g_vals = np.vstack([_first(np.ones(n - f), 4), _first(-np.ones(n - f), 4),
                            np.column_stack([lim_v, e_col]),
                            np.column_stack([-lim_v, e_col])])
        # in units of curvature (1/m): the rows above are h^2 times that
        sc = 1.0 / (h * h)
        g_vals[2 * (n - f):] *= sc
        self.qp = BandedQP(np.vstack(r_cols), sc * np.vstack(r_vals),
                           sc * np.concatenate(r_vec), g_cols, g_vals, nv)
        self.h_curv = np.concatenate([k_lim - sc * const[rows], k_lim + sc * const[rows]])

    def _rows(self, idx: np.ndarray, coef: np.ndarray, const: np.ndarray
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return rows over offsets ``idx`` as variable stencils, the fixed ones in ``const``."""
        f = len(self.fixed)
        if f == 0:
            return 2 * idx, coef, const
        is_fixed = idx < f
        const = const + np.where(is_fixed, coef * self.fixed[np.minimum(idx, f - 1)],
                                 0.0).sum(axis=1)
        vals = np.where(is_fixed, 0.0, coef)
        cols = 2 * (np.maximum(idx, f) - f)
        cols = np.where(is_fixed, cols[:, -1:], cols)   # padding: a free column
        return cols, vals, const

    def solve(self, lo: np.ndarray, hi: np.ndarray) -> Tuple[np.ndarray, int]:
        """Return the offsets ``a`` (n,) for the bounds ``lo <= a <= hi``, and the iterations."""
        f = len(self.fixed)
        hv = np.concatenate([hi[f:], -lo[f:], self.h_curv])
        res = self.qp.solve(hv, eps=1e-6, max_iter=40)
        a = np.empty(self.n)
        a[:f] = self.fixed
        a[f:] = res.x[self.ia]
        return a, res.iterations


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    """Return stencil columns or values padded to ``width`` (repeating the last column / 0)."""
    if a.shape[1] >= width:
        return a
    fill = a[:, -1:] if a.dtype.kind in 'iu' else np.zeros((a.shape[0], 1))
    return np.hstack([a] + [fill] * (width - a.shape[1]))


def _first(values: np.ndarray, width: int = 3) -> np.ndarray:
    """Return stencil values with ``values`` in the first column, zeros after."""
    out = np.zeros((values.size, width))
    out[:, 0] = values
    return out
