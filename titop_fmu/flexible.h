/* The flexible body of the TITOP blocks in C (docs/flexible-bodies.md, eqs. (F1)-(F18)),
 * included by kernel.c: what titop_fmu/blocks/flexible.py computes, step by step, so that the
 * kernel, its dual numbers (kernel_dual.cpp) and the standalone FMUs have it. Valid C99 and
 * C++ (kernel_dual.cpp compiles it on dual numbers).
 *
 * Its data follow the block's children's points in the kernel's parameters (kernel.py's
 * tables): FlexData below; n modes, nc nodes (the child ports). */

typedef struct {
    int n, nc;
    const double *Mre0;    /* [C1; C2] = L^T, 6 x n (eq. (F4)) */
    const double *K, *Dd;  /* omega^2, 2 zeta omega */
    const double *F;       /* I_phi_phi as (9 n) x n: F_ab rows (eq. (F5)) */
    const double *E;       /* I_phi_x0 as 9 x n */
    const double *trE;     /* tr E_j */
    const double *K0t, *K0r, *K0om;   /* (3 n) x n, (3 n) x n, (6 n) x n (eq. (F2)) */
    const double *flags;   /* which n x n blocks are not zero (1) or are (0): F's 9, K0t's 3, K0r's 3,
                            * K0om's 6 (a beam along an axis has most of them zero: skipped) */
    const double *ports;   /* per node: phi (3 n), psi (3 n), K0F (3 n x n), K0M (3 n x n), 6 flags */
} FlexData;

enum { FF_F = 0, FF_T = 9, FF_R = 12, FF_OM = 15, FF_N = 21 };

static FlexData flex_data(const double *p, int n, int nc)
{
    FlexData d;
    d.n = n; d.nc = nc;
    d.Mre0 = p; p += 6 * n;
    d.K = p; p += n;
    d.Dd = p; p += n;
    d.F = p; p += 9 * n * n;
    d.E = p; p += 9 * n;
    d.trE = p; p += n;
    d.K0t = p; p += 3 * n * n;
    d.K0r = p; p += 3 * n * n;
    d.K0om = p; p += 6 * n * n;
    d.flags = p; p += FF_N;
    d.ports = p;
    return d;
}

static const double *flex_port(const FlexData *d, int i)
{
    return d->ports + i * (6 * d->n + 6 * d->n * d->n + 6);
}

/* a . b over n: four partial sums (the products are independent: no chain of additions) */
static double flex_dot(int n, const double *a, const double *b)
{
    double v0 = 0.0, v1 = 0.0, v2 = 0.0, v3 = 0.0;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        v0 += a[j] * b[j];
        v1 += a[j + 1] * b[j + 1];
        v2 += a[j + 2] * b[j + 2];
        v3 += a[j + 3] * b[j + 3];
    }
    for (; j < n; j++)
        v0 += a[j] * b[j];
    return (v0 + v1) + (v2 + v3);
}

/* y = A x for the blocks of n rows of A (blocks x n rows, row-major) whose flag is not zero,
 * zero for the others */
static void flex_matvec(int blocks, int n, const double *A, const double *flags, const double *x, double *y)
{
    for (int k = 0; k < blocks; k++)
        for (int r = n * k; r < n * (k + 1); r++)
            y[r] = flags[k] != 0.0 ? flex_dot(n, A + n * r, x) : 0.0;
}

/* exp((*theta)), the left Jacobian J_l(theta) and Jdot_l thetadot (eq. (F11), eq. (F12);
 * blocks/flexible.py rotation_and_jacobians) */
static void flex_rotation(const double *th, const double *thd, double *E, double *Jl, double *Jdot)
{
    double t2 = th[0] * th[0] + th[1] * th[1] + th[2] * th[2], t = sqrt(t2), s1, a, b, da, db;
    if (t < 1e-4) {
        s1 = 1.0 - t2 / 6.0; a = 0.5 - t2 / 24.0; b = 1.0 / 6.0 - t2 / 120.0;
        da = -1.0 / 12.0 + t2 / 180.0; db = -1.0 / 60.0 + t2 / 1260.0;
    } else {
        double s = sin(t), c = cos(t);
        s1 = s / t; a = (1.0 - c) / t2; b = (t - s) / (t2 * t);
        da = (t * s - 2.0 * (1.0 - c)) / (t2 * t2); db = (3.0 * s - t * c - 2.0 * t) / (t2 * t2 * t);
    }
    double S[9] = {0.0, -th[2], th[1], th[2], 0.0, -th[0], -th[1], th[0], 0.0}, S2[9];
    mat3_mul(S, S, S2);
    for (int k = 0; k < 9; k++) {
        double I = (k % 4 == 0) ? 1.0 : 0.0;
        E[k] = I + s1 * S[k] + a * S2[k];
        Jl[k] = I + a * S[k] + b * S2[k];
    }
    double rate = th[0] * thd[0] + th[1] * thd[1] + th[2] * thd[2], tx[3], ttx[3], dtx[3];
    cross(th, thd, tx);
    cross(th, tx, ttx);
    cross(thd, tx, dtx);
    for (int k = 0; k < 3; k++)
        Jdot[k] = da * rate * tx[k] + db * rate * ttx[k] + b * dtx[k];
}

/* a node's place in the workspace: r (3), theta (3), E (9), bias (6), then Jt (6 x n) */
enum { FN_R = 0, FN_TH = 3, FN_E = 6, FN_BIAS = 15, FN_JT = 21 };

static int flex_node_size(int n)
{
    return 21 + 6 * n;
}

/* The state level of a flexible body (eqs. (F7)-(F9), (F14)-(F15), (F11)-(F12); FlexibleBody.kinematics):
 * from its modal states x (eta, etadot), the twist tw at P and its pose m (18, at P), the
 * configuration-dependent M_rr (36), M_re (6 x n), h_r (6), f_e (n), D_res (36), and per node
 * its frame, Jacobian, the state part of its acceleration and its motion vector's twist and pose
 * (m_out, 18 each), its elastic displacement (u, 6 each). D_P is the rigid mass (36). */
static void flex_kinematics(const FlexData *d, const double *D_P, const double *PC, const double *x,
                            const double *m, const double *P_ai, double *Mrr, double *Mre, double *hr,
                            double *fe, double *Dres, double *nodes, double *m_out, double *u)
{
    int n = d->n;
    const double *eta = x, *etad = x + n, *tw = m + 6, *v = m + 6, *w = m + 9;
    double Fe[9 * n + 1], Fd[9 * n + 1], Gam[3 * n + 1], Gamd[3 * n + 1], Lt[3 * n + 1], Ltd[3 * n + 1];
    double Lr[3 * n + 1], Lrd[3 * n + 1], Ko[6 * n + 1], Q[9], Qd[9], Ee[9], Ed[9], sp[6], spd[6];
    static const int cyc[3][2] = {{1, 2}, {2, 0}, {0, 1}};
    flex_matvec(9, n, d->F, d->flags + FF_F, eta, Fe);
    flex_matvec(9, n, d->F, d->flags + FF_F, etad, Fd);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            Q[3 * a + b] = flex_dot(n, Fe + n * (3 * a + b), eta);
            Qd[3 * a + b] = flex_dot(n, Fe + n * (3 * b + a), etad);        /* eta^T F_ab etadot */
        }
    for (int k = 0; k < 3; k++) {                                          /* Gam(eta), Gam(etadot) */
        int a = cyc[k][0], b = cyc[k][1];
        for (int j = 0; j < n; j++) {
            Gam[n * k + j] = Fe[n * (3 * b + a) + j] - Fe[n * (3 * a + b) + j];
            Gamd[n * k + j] = Fd[n * (3 * b + a) + j] - Fd[n * (3 * a + b) + j];
        }
    }
    for (int k = 0; k < 9; k++) {
        Ee[k] = flex_dot(n, d->E + n * k, eta);
        Ed[k] = flex_dot(n, d->E + n * k, etad);
    }
    flex_matvec(3, n, d->K0t, d->flags + FF_T, eta, Lt);
    flex_matvec(3, n, d->K0t, d->flags + FF_T, etad, Ltd);
    flex_matvec(3, n, d->K0r, d->flags + FF_R, eta, Lr);
    flex_matvec(3, n, d->K0r, d->flags + FF_R, etad, Lrd);
    flex_matvec(6, n, d->K0om, d->flags + FF_OM, eta, Ko);
    for (int p = 0; p < 6; p++) {
        sp[p] = flex_dot(n, Ko + n * p, eta);
        spd[p] = 2.0 * flex_dot(n, Ko + n * p, etad);
    }
    double dc[3], cd[3];                                                   /* c(eta) - c0, cdot (eq. (F8)) */
    for (int k = 0; k < 3; k++) {
        dc[k] = flex_dot(n, d->Mre0 + n * k, eta) + 0.5 * flex_dot(n, Lt + n * k, eta);
        cd[k] = flex_dot(n, d->Mre0 + n * k, etad) + flex_dot(n, Lt + n * k, etad);
    }
    double dI[9], Id[9], trEe = Ee[0] + Ee[4] + Ee[8], trEd = Ed[0] + Ed[4] + Ed[8];
    double trQ = Q[0] + Q[4] + Q[8], trQd = 2.0 * (Qd[0] + Qd[4] + Qd[8]);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            int k = 3 * a + b, kt = 3 * b + a;
            double I = a == b ? 1.0 : 0.0, pi = 0.0, pid = 0.0;
            /* sum_p s_p Pi_p: the diagonal products xx, yy, zz, then xy, xz, yz halved off it */
            if (a == b) {
                pi = sp[a];
                pid = spd[a];
            } else {
                int p = (a + b == 1) ? 3 : (a + b == 2) ? 4 : 5;
                pi = 0.5 * sp[p];
                pid = 0.5 * spd[p];
            }
            dI[k] = (2.0 * trEe + trQ) * I - Ee[k] - Ee[kt] - Q[k] - pi;
            Id[k] = (2.0 * trEd + trQd) * I - Ed[k] - Ed[kt] - (Qd[k] + Qd[kt]) - pid;
        }
    double sk[9] = {0.0, -dc[2], dc[1], dc[2], 0.0, -dc[0], -dc[1], dc[0], 0.0};
    memcpy(Mrr, D_P, 36 * sizeof(double));                                 /* eq. (F7) */
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            Mrr[6 * (3 + a) + b] += sk[3 * a + b];
            Mrr[6 * a + 3 + b] -= sk[3 * a + b];
            Mrr[6 * (3 + a) + 3 + b] += dI[3 * a + b];
        }
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < n; j++) {
            Mre[n * k + j] = d->Mre0[n * k + j] + Lt[n * k + j];
            Mre[n * (3 + k) + j] = d->Mre0[n * (3 + k) + j] + Gam[n * k + j] + Lr[n * k + j];
        }
    double p_r[6], Mdq[6], t1[3], t2[3], Cp[6];
    mat6_vec(Mrr, tw, p_r);
    for (int r = 0; r < 6; r++)
        p_r[r] += flex_dot(n, Mre + n * r, etad);
    cross(w, cd, t1);
    cross(cd, v, t2);
    mat3_vec(Id, w, Mdq + 3);
    for (int k = 0; k < 3; k++) {
        Mdq[k] = t1[k] + flex_dot(n, Ltd + n * k, etad);
        Mdq[3 + k] += t2[k] + flex_dot(n, Lrd + n * k, etad);
    }
    C_times(tw, p_r, Cp);
    for (int r = 0; r < 6; r++)
        hr[r] = Mdq[r] + Cp[r];                                             /* eq. (F9) */
    double vw[3], ww[9], w2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    double pw[6] = {w[0] * w[0], w[1] * w[1], w[2] * w[2], w[0] * w[1], w[0] * w[2], w[1] * w[2]};
    cross(v, w, vw);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            ww[3 * a + b] = w[a] * w[b];
    for (int j = 0; j < n; j++) {
        double Nw = w2 * (Fe[j] + Fe[4 * n + j] + Fe[8 * n + j]), cent = w2 * d->trE[j], h = 0.0;
        for (int ab = 0; ab < 9; ab++) {
            Nw -= ww[ab] * Fe[n * ab + j];
            cent -= ww[ab] * d->E[n * ab + j];
        }
        for (int k = 0; k < 3; k++)
            h += 2.0 * Gamd[n * k + j] * w[k] - (d->Mre0[n * k + j] + Lt[n * k + j]) * vw[k];
        for (int p = 0; p < 6; p++)
            h += pw[p] * Ko[n * p + j];
        fe[j] = d->K[j] * eta[j] + d->Dd[j] * etad[j] + h - cent - Nw;
    }
    for (int r = 0; r < 6; r++)                                             /* eq. (F15) */
        for (int c = 0; c < 6; c++)
            Dres[6 * r + c] = Mrr[6 * r + c] - flex_dot(n, Mre + n * r, Mre + n * c);
    for (int i = 0; i < d->nc; i++) {                                      /* the nodes, eqs. (F11)-(F12) */
        const double *port = flex_port(d, i), *phi = port, *psi = port + 3 * n;
        const double *K0F = port + 6 * n, *K0M = port + 6 * n + 3 * n * n, *pf = port + 6 * n + 6 * n * n;  /* 3 + 3 flags */
        double *node = nodes + flex_node_size(n) * i, *r = node + FN_R, *th = node + FN_TH, *E = node + FN_E;
        double *Jt = node + FN_JT, KFe[3 * n + 1], KMe[3 * n + 1], KFd[3 * n + 1], KMd[3 * n + 1];
        flex_matvec(3, n, K0F, pf, eta, KFe);
        flex_matvec(3, n, K0F, pf, etad, KFd);
        flex_matvec(3, n, K0M, pf + 3, eta, KMe);
        flex_matvec(3, n, K0M, pf + 3, etad, KMd);
        double thd[3], Jl[9], Jdot[3], Je[3], wrel[3], vC[3], wC[3], c1[3], pos[3], P[9];
        for (int k = 0; k < 3; k++) {
            r[k] = PC[3 * i + k] + flex_dot(n, phi + n * k, eta) - 0.5 * flex_dot(n, KFe + n * k, eta);
            th[k] = flex_dot(n, psi + n * k, eta) - 0.5 * flex_dot(n, KMe + n * k, eta);
            for (int j = 0; j < n; j++) {
                Jt[n * k + j] = phi[n * k + j] - KFe[n * k + j];               /* J_C */
                Jt[n * (3 + k) + j] = psi[n * k + j] - KMe[n * k + j];         /* Theta, then W_C */
            }
        }
        for (int k = 0; k < 3; k++)
            thd[k] = flex_dot(n, Jt + n * (3 + k), etad);
        flex_rotation(th, thd, E, Jl, Jdot);
        for (int j = 0; j < n; j++) {                                      /* W_C = J_l Theta */
            double col[3] = {Jt[n * 3 + j], Jt[n * 4 + j], Jt[n * 5 + j]}, wc[3];
            mat3_vec(Jl, col, wc);
            for (int k = 0; k < 3; k++)
                Jt[n * (3 + k) + j] = wc[k];
        }
        for (int k = 0; k < 3; k++) {
            Je[k] = flex_dot(n, Jt + n * k, etad);
            wrel[k] = flex_dot(n, Jt + n * (3 + k), etad);
        }
        double *mo = m_out + 18 * i, *bias = node + FN_BIAS, bv[3], bw[3], Kd[3], wn[3], t3[3];
        cross(w, r, c1);
        for (int k = 0; k < 3; k++) {
            vC[k] = v[k] + c1[k] + Je[k];
            wC[k] = w[k] + wrel[k];
            pos[k] = m[12 + k] + r[k];
        }
        memset(mo, 0, 6 * sizeof(double));
        mat3T_vec(E, vC, mo + 6);
        mat3T_vec(E, wC, mo + 9);
        mat3T_vec(E, pos, mo + 12);
        mat3_mul(P_ai, E, P);
        euler_angles(P, mo + 15);
        cross(w, Je, bv);
        for (int k = 0; k < 3; k++) {
            bv[k] -= flex_dot(n, KFd + n * k, etad);
            Kd[k] = flex_dot(n, KMd + n * k, etad);
        }
        mat3_vec(Jl, Kd, t3);
        for (int k = 0; k < 3; k++)
            bw[k] = Jdot[k] - t3[k];
        mat3T_vec(E, wrel, wn);
        mat3T_vec(E, bv, bias);
        mat3T_vec(E, bw, bias + 3);
        cross(wn, mo + 6, t1);
        cross(wn, mo + 9, t2);
        for (int k = 0; k < 3; k++) {
            bias[k] -= t1[k];
            bias[3 + k] -= t2[k];
            u[6 * i + k] = r[k] - PC[3 * i + k];
            u[6 * i + 3 + k] = th[k];
        }
    }
}

/* the children's wrenches on a flexible body (eq. (F13)): their sum at P (Wc) and their modal
 * force (Q, n), each wrench wi (in its node's frame; NULL: the constant one at cw times f) */
static void flex_children(const FlexData *d, const double *nodes, const double *const *w_c, const double *const *cw,
                          double f, double *Wc, double *Q)
{
    int n = d->n;
    memset(Wc, 0, 6 * sizeof(double));
    for (int j = 0; j < n; j++)
        Q[j] = 0.0;
    for (int i = 0; i < d->nc; i++) {
        const double *node = nodes + flex_node_size(n) * i, *E = node + FN_E, *Jt = node + FN_JT, *r = node + FN_R;
        double wi[6], wa[6], nr[3] = {-r[0], -r[1], -r[2]}, t[6];
        for (int k = 0; k < 6; k++)
            wi[k] = w_c[i] ? w_c[i][k] : f * cw[i][k];
        mat3_vec(E, wi, wa);
        mat3_vec(E, wi + 3, wa + 3);
        tauT_vec(nr, wa, t);
        for (int k = 0; k < 6; k++)
            Wc[k] += t[k];
        for (int j = 0; j < n; j++)
            for (int k = 0; k < 6; k++)
                Q[j] += Jt[n * k + j] * wa[k];
    }
}

/* W(a_hat) and etaddot (eqs. (F14), (F15)) from the children's Wc and Q: f scales the affine
 * part (the state terms h_r, f_e) */
static void flex_needed(int n, const double *Mrr, const double *Mre, const double *hr, const double *fe, double f,
                        const double *a_hat, const double *Wc, const double *Q, double *W, double *eddot)
{
    for (int j = 0; j < n; j++) {
        double v = Q[j] - f * fe[j];
        for (int k = 0; k < 6; k++)
            v -= Mre[n * k + j] * a_hat[k];
        eddot[j] = v;
    }
    mat6_vec(Mrr, a_hat, W);
    for (int k = 0; k < 6; k++)
        W[k] += flex_dot(n, Mre + n * k, eddot) + f * hr[k] - Wc[k];
}

/* a node's spatial acceleration (eq. (F12)) from the frame's a and etaddot: f scales the state
 * part (the node's bias) */
static void flex_child_acceleration(int n, const double *node, double f, const double *a, const double *eddot,
                                    double *out)
{
    const double *r = node + FN_R, *E = node + FN_E, *Jt = node + FN_JT, *bias = node + FN_BIAS;
    double nr[3] = {-r[0], -r[1], -r[2]}, t[6];
    tau_vec(nr, a, t);
    for (int k = 0; k < 6; k++)
        t[k] += flex_dot(n, Jt + n * k, eddot);
    mat3T_vec(E, t, out);
    mat3T_vec(E, t + 3, out + 3);
    for (int k = 0; k < 6; k++)
        out[k] += f * bias[k];
}
