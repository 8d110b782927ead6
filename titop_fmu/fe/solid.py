"""A solid box meshed with 20-node bricks (Abaqus C3D20 node order), its mass and stiffness
matrices (isoparametric, 3 x 3 x 3 Gauss points, linear isotropic material), written as an
Abaqus input file and the matrices as Abaqus's ``*MATRIX OUTPUT, FORMAT=COORDINATE`` writes
them (row, column, value), which Exudyn's ``FEMinterface`` reads (``ImportFromAbaqusInputFile``,
``ReadMassMatrixFromAbaqus``): a small mesh that stands in for a mesher's in the docs'
example and the importer's tests (docs/flexible-bodies.md, "From a finite-element code")."""

from pathlib import Path

import numpy as np

#: natural coordinates of the 20 nodes of a C3D20 brick, in Abaqus's order
NATURAL = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1], [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1],
                    [0, -1, -1], [1, 0, -1], [0, 1, -1], [-1, 0, -1], [0, -1, 1], [1, 0, 1], [0, 1, 1], [-1, 0, 1],
                    [-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], dtype=float)


def shape(p):
    """``(N, dN)`` of the serendipity brick at the natural point ``p``: 20 and 20 x 3."""
    N, dN = np.zeros(20), np.zeros((20, 3))
    for i, n in enumerate(NATURAL):
        f = 1 + n * p
        zero = np.flatnonzero(n == 0)
        if zero.size == 0:
            s = n @ p - 2
            N[i] = np.prod(f) * s / 8
            for d in range(3):
                dN[i, d] = (n[d] * np.prod(np.delete(f, d)) * s + np.prod(f) * n[d]) / 8
        else:
            m = zero[0]
            rest = np.delete(np.arange(3), m)
            N[i] = (1 - p[m] ** 2) * np.prod(f[rest]) / 4
            dN[i, m] = -2 * p[m] * np.prod(f[rest]) / 4
            for d in rest:
                dN[i, d] = (1 - p[m] ** 2) * n[d] * np.prod(f[np.setdiff1d(rest, [d])]) / 4
    return N, dN


def box(length, width, height, nx, ny, nz):
    """``(nodes, elements)`` of the box ``[0, length] x [-width/2, width/2] x [-height/2, height/2]``
    in ``nx ny nz`` bricks (elements: 0-based node numbers, C3D20 order)."""
    lattice = np.stack(np.meshgrid(np.arange(2 * nx + 1), np.arange(2 * ny + 1), np.arange(2 * nz + 1),
                                   indexing="ij"), axis=-1).reshape(-1, 3)
    keep = lattice[(lattice % 2).sum(axis=1) <= 1]
    number = {tuple(v): i for i, v in enumerate(keep)}
    nodes = keep * [length / (2 * nx), width / (2 * ny), height / (2 * nz)] - [0, width / 2, height / 2]
    elements = [[number[tuple(2 * np.array([i, j, k]) + 1 + n.astype(int))] for n in NATURAL]
                for i in range(nx) for j in range(ny) for k in range(nz)]
    return nodes, np.array(elements)


def matrices(nodes, elements, E, nu, rho):
    """``(M, K)``, sparse 3N x 3N, DOFs ``x y z`` per node."""
    from scipy import sparse
    lam, mu = E * nu / ((1 + nu) * (1 - 2 * nu)), E / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[np.arange(6), np.arange(6)] += [2 * mu] * 3 + [mu] * 3
    g, w = np.polynomial.legendre.leggauss(3)
    points = [(np.array([a, b, c]), wa * wb * wc) for a, wa in zip(g, w) for b, wb in zip(g, w) for c, wc in zip(g, w)]
    tables = [(shape(p), wt) for p, wt in points]
    n = 3 * len(nodes)
    rows, cols, mass, stiffness = [], [], [], []
    for conn in elements:
        X = nodes[conn]
        Ke, Me = np.zeros((60, 60)), np.zeros((60, 60))
        for (N, dN), wt in tables:
            J = dN.T @ X
            dx = dN @ np.linalg.inv(J).T                    # dN/dx, 20 x 3
            B = np.zeros((6, 60))
            for a in range(3):
                B[a, a::3] = dx[:, a]
            B[3, 1::3], B[3, 2::3] = dx[:, 2], dx[:, 1]     # gamma_yz
            B[4, 0::3], B[4, 2::3] = dx[:, 2], dx[:, 0]     # gamma_xz
            B[5, 0::3], B[5, 1::3] = dx[:, 1], dx[:, 0]     # gamma_xy
            dV = np.linalg.det(J) * wt
            Ke += B.T @ D @ B * dV
            Me += rho * np.kron(np.outer(N, N), np.eye(3)) * dV
        idx = (3 * np.asarray(conn)[:, None] + np.arange(3)).ravel()
        rows.append(np.repeat(idx, 60))
        cols.append(np.tile(idx, 60))
        mass.append(Me.ravel())
        stiffness.append(Ke.ravel())
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return tuple(sparse.coo_matrix((np.concatenate(v), (rows, cols)), shape=(n, n)).tocsr() for v in (mass, stiffness))


def write_abaqus(folder, nodes, elements, M, K, name="beam"):
    """``name.inp`` (one part, its nodes and C3D20 elements, 1-based) and ``name_MASS1.mtx``,
    ``name_STIF1.mtx`` (row, column, value; 1-based): the paths ``(inp, mass, stiffness)``."""
    inp = Path(folder) / f"{name}.inp"
    lines = ["*Heading", "*Part, name=Part-1", "*Node"]
    lines += [f"{i + 1}, {x:.17g}, {y:.17g}, {z:.17g}" for i, (x, y, z) in enumerate(nodes)]
    lines.append("*Element, type=C3D20")
    for e, conn in enumerate(elements):
        ids = [str(c + 1) for c in conn]
        lines += [f"{e + 1}, " + ", ".join(ids[:15]) + ",", ", ".join(ids[15:])]
    lines += ["*End Part"]
    inp.write_text("\n".join(lines) + "\n")
    out = [inp]
    for tag, A in (("MASS1", M), ("STIF1", K)):
        A = A.tocoo()
        path = Path(folder) / f"{name}_{tag}.mtx"
        np.savetxt(path, np.column_stack([A.row + 1, A.col + 1, A.data]), fmt=["%d", "%d", "%.17g"])
        out.append(path)
    return tuple(out)
