/* The TITOP blocks in C: the right-hand side of a monolithic tree (the fast path of
 * titop_fmu.system.System.simulate) and, for a tree of one block, a block unit's outputs,
 * derivatives and communication step (titop_fmu.unit.BlockUnit, and so the FMUs).
 * kernel.py beside it builds and loads it.
 *
 * The NumPy blocks (titop_fmu/blocks/) stay the reference; this file follows
 * them step by step, with the same equation numbers (those of the paper, eqs. (1)-(29)),
 * and tests check it equal to them to rounding (tests/physics/test_loop_solve.py,
 * tests/blocks/test_unit.py):
 *
 *   1. kinematics, parents first: each block's motion vector at its port in its
 *      own frame, its DCMs, gravity, the non-linear wrench, the twist/pose part of
 *      its children's motion vectors (Block.kinematics);
 *   2. the acceleration stage, affine in (parent acceleration, linked children's
 *      wrenches), evaluated on the columns [affine part, unit inputs...]
 *      (Block.accelerations); upward pass, leaves first: the children's wrench maps
 *      W = K a + k condensed into the block's own map (system._RecursiveLoop), all of a
 *      block's children as one wrench at one port (their wrenches enter only as their
 *      sum at P, eq. (13)): 6 columns and a 6 x 6 solve however many children;
 *   3. downward pass, roots first: accelerations, joint accelerations, state
 *      derivatives.
 *
 * Blocks: floating base (eqs. (11)-(13)), imposed-motion base (Fig. 1, eq. (11)),
 * welded body (eq. (15)), revolute (eqs. (16)-(23)) and prismatic (eqs. (24)-(29))
 * bodies, forward and inverse, and the loop closure (section 3.4; its wrenches depend on
 * motion only, so it cuts its loop: a constant wrench map to each of its two parents);
 * a root that is not a base takes a constant motion vector. Matrices are
 * row-major; a 6-vector is [v; w] (twist, acceleration) or [F; T] (wrench).
 * All sizes and the layout are set by kernel.py.
 *
 * Every body block's body is rigid or flexible (I_FLEX; flexible.h, docs/flexible-bodies.md):
 * a flexible body has I_MODES modes, their states after the block's own, its data after its
 * children's points, and it reads each linked child's wrench on its own (6 columns each,
 * not their sum). */

#include <math.h>
#include <string.h>

#include "spatial.h"         /* DCMs and Euler angles (3-2-1), as titop_fmu/spatial.py */

enum { BASE = 0, WELDED = 1, REVOLUTE = 2, PRISMATIC = 3, IMPOSED = 4, CLOSURE = 5 };

/* per block, the integers (NI of them) */
enum { I_TYPE, I_PARENT, I_SLOT, I_STATE, I_NC, I_DPAR, I_INERTIAL, I_MCONST, I_EXT, I_TAU,
       I_INVERSE, I_PARENT_R, I_SLOT_R, I_MCONST_R, I_CHILD, I_FLEX, I_MODES, NI };
/* I_EXT: a base's ext.w, an imposed-motion base's p.a; I_TAU: a joint's joint.tau, or in the
 * inverse mode (I_INVERSE) its joint.qdd; I_PARENT.. for a loop closure's port l, I_PARENT_R..
 * for its port r */
/* per child (at I_CHILD, 2 each): the linked block or -1, the pointer of its constant wrench or -1 */

/* per block, the parameters at I_DPAR (a loop closure: its K and D at D_D and D_DINV) */
enum { D_D = 0, D_DINV = 36, D_G = 72, D_MOUNT = 75, D_AXIS = 84, D_J = 87, D_K = 88, D_DAMP = 89, D_PC = 90 };

/* --- spatial algebra (titop_fmu/spatial.py) --------------------------------------------- */

static void mat3_mul(const double *A, const double *B, double *C)         /* C = A B */
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

static void mat3T_vec(const double *A, const double *v, double *out)     /* out = A^T v */
{
    for (int j = 0; j < 3; j++)
        out[j] = v[0] * A[j] + v[1] * A[3 + j] + v[2] * A[6 + j];
}

static void mat3_vec(const double *A, const double *v, double *out)      /* out = A v */
{
    for (int i = 0; i < 3; i++)
        out[i] = A[3 * i] * v[0] + A[3 * i + 1] * v[1] + A[3 * i + 2] * v[2];
}

static void cross(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static void mat6_vec(const double *D, const double *x, double *out)      /* out = D x */
{
    for (int i = 0; i < 6; i++) {
        double s = 0.0;
        for (int j = 0; j < 6; j++)
            s += D[6 * i + j] * x[j];
        out[i] = s;
    }
}

/* tau(r) x = [x_v + r x x_w; x_w]: tau_CP with r = CP (nomenclature) */
static void tau_vec(const double *r, const double *x, double *out)
{
    double c[3];
    cross(r, x + 3, c);
    out[0] = x[0] + c[0]; out[1] = x[1] + c[1]; out[2] = x[2] + c[2];
    out[3] = x[3]; out[4] = x[4]; out[5] = x[5];
}

/* tau(r)^T W = [F; T - r x F]: a wrench transported from C to P (eq. (13)) */
static void tauT_vec(const double *r, const double *W, double *out)
{
    double c[3];
    cross(r, W, c);
    out[0] = W[0]; out[1] = W[1]; out[2] = W[2];
    out[3] = W[3] - c[0]; out[4] = W[4] - c[1]; out[5] = W[5] - c[2];
}

/* C(x') y (eq. (7)) */
static void C_times(const double *tw, const double *y, double *out)
{
    double vx = tw[0], vy = tw[1], vz = tw[2], wx = tw[3], wy = tw[4], wz = tw[5];
    out[0] = wy * y[2] - wz * y[1];
    out[1] = wz * y[0] - wx * y[2];
    out[2] = wx * y[1] - wy * y[0];
    out[3] = vy * y[2] - vz * y[1] + wy * y[5] - wz * y[4];
    out[4] = vz * y[0] - vx * y[2] + wz * y[3] - wx * y[5];
    out[5] = vx * y[1] - vy * y[0] + wx * y[4] - wy * y[3];
}

/* the rotation vector phi with P = e^{(*phi)} (spatial.rotation_vector: accurate at every angle) */
static void rotation_vector(const double *P, double *phi)
{
    double a[3] = {P[7] - P[5], P[2] - P[6], P[3] - P[1]};
    double s = 0.5 * sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), c = 0.5 * (P[0] + P[4] + P[8] - 1.0);
    double angle = atan2(s, c);
    if (angle < 3.14159265358979323846 - 1e-4) {
        double f = angle < 1e-4 ? 0.5 * (1.0 + angle * angle / 6.0) : angle / (2.0 * s);
        for (int i = 0; i < 3; i++)
            phi[i] = f * a[i];
        return;
    }
    double Bd[3] = {P[0] - c, P[4] - c, P[8] - c}, axis[3];      /* angle near pi: the symmetric part */
    int k = 0;
    for (int i = 1; i < 3; i++)
        if (Bd[i] > Bd[k])
            k = i;
    double den = sqrt(Bd[k] * (1.0 - c));
    for (int i = 0; i < 3; i++)
        axis[i] = (i == k ? Bd[k] : 0.5 * (P[3 * i + k] + P[3 * k + i])) / den;
    if (axis[0] * a[0] + axis[1] * a[1] + axis[2] * a[2] < 0)
        for (int i = 0; i < 3; i++)
            axis[i] = -axis[i];
    double n = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    for (int i = 0; i < 3; i++)
        phi[i] = angle * axis[i] / n;
}

static void dcm_from_quat(const double *q, double *P)
{
    double w = q[0], x = q[1], y = q[2], z = q[3];
    double s = 2.0 / (w * w + x * x + y * y + z * z);
    P[0] = 1.0 - s * (y * y + z * z); P[1] = s * (x * y - w * z);       P[2] = s * (x * z + w * y);
    P[3] = s * (x * y + w * z);       P[4] = 1.0 - s * (x * x + z * z); P[5] = s * (y * z - w * x);
    P[6] = s * (x * z - w * y);       P[7] = s * (y * z + w * x);       P[8] = 1.0 - s * (x * x + y * y);
}

/* e^{theta (*r~)}, Rodrigues (eq. (16)) */
static void axis_rotation(const double *r, double theta, double *R)
{
    double x = r[0], y = r[1], z = r[2], c = cos(theta), s = sin(theta), v = 1.0 - c;
    R[0] = c + v * x * x;     R[1] = v * x * y - s * z; R[2] = v * x * z + s * y;
    R[3] = v * x * y + s * z; R[4] = c + v * y * y;     R[5] = v * y * z - s * x;
    R[6] = v * x * z - s * y; R[7] = v * y * z + s * x; R[8] = c + v * z * z;
}

/* ([m_P]_Ra, P_a/i) from [m_P]_Rb (motion_in_frame) */
static void motion_in_frame(const double *m_b, const double *P_ab, double *m_a, double *P_ai)
{
    double P_bi[9];
    for (int k = 0; k < 5; k++)
        mat3T_vec(P_ab, m_b + 3 * k, m_a + 3 * k);
    dcm_from_euler(m_b + 15, P_bi);
    mat3_mul(P_bi, P_ab, P_ai);
    euler_angles(P_ai, m_a + 15);
}

#include "flexible.h"        /* the flexible body (blocks/flexible.py) */

/* --- one block ---------------------------------------------------------------------------- */

typedef struct {                 /* a block's workspace (see ws_layout) */
    double *P_ab, *P_ai, *m, *g6, *bias, *e, *scal, *m_out, *w, *qdd, *eff, *a_out, *K, *k, *X, *A, *a_child;
    double *W_l, *W_r;          /* a loop closure's wrenches on its parts l and r */
    /* a flexible body: M_rr, M_re, h_r, f_e, D_res (flex_kinematics), its nodes, their elastic
     * displacements, the modal accelerations per column and solved (eq. (F14)) */
    double *Mrr, *Mre, *hr, *fe, *Dres, *nodes, *u, *eddot, *eddot_z;
} WS;

static int own_states(int type)   /* the block's own states, before a flexible body's */
{
    return type == BASE || type == IMPOSED ? 13 : type == REVOLUTE || type == PRISMATIC ? 2 : 0;
}

static int n_linked(const int *B, const int *I)
{
    int n = 0;
    for (int i = 0; i < B[I_NC]; i++)
        n += I[B[I_CHILD] + 2 * i] >= 0;
    return n;
}

static int n_a(const int *B)      /* 6 acceleration inputs for a linked parent (a closure has none) */
{
    return B[I_PARENT] >= 0 && B[I_TYPE] != CLOSURE ? 6 : 0;
}

/* 6 wrench inputs for the linked children: a rigid body reads its children's wrenches only as
 * their sum at P (eq. (13)), so they are condensed as one wrench at the first one's port; a
 * flexible body reads each on its own (eq. (F13)): 6 per linked child */
static int n_w(const int *B, const int *I)
{
    return B[I_FLEX] ? 6 * n_linked(B, I) : n_linked(B, I) ? 6 : 0;
}

static int n_cols(const int *B, const int *I)     /* [affine part, a_p (n_a), w (n_w)] */
{
    return 1 + n_a(B) + n_w(B, I);
}

static int ws_size(const int *B, const int *I)
{
    int nc = B[I_NC], nw = n_w(B, I), ncol = n_cols(B, I), na = n_a(B), n = B[I_MODES];
    int flex = B[I_FLEX] ? 36 + 6 * n + 6 + n + 36 + nc * flex_node_size(n) + 6 * nc + n * ncol + n : 0;
    return 9 + 9 + 18 + 6 + 6 + 6 + 4 + 18 * nc + 6 * ncol + 2 * ncol + 6 * ncol * (nc + 1) + 36 + 6
        + nw * (1 + na) + nw * nw + 6 * nc + 12 + flex;
}

static void ws_layout(const int *B, const int *I, double *p, WS *s)   /* in the order of ws_size */
{
    int nc = B[I_NC], nw = n_w(B, I), ncol = n_cols(B, I), na = n_a(B);
#define TAKE(f, n) do { s->f = p; p += (n); } while (0)
    TAKE(P_ab, 9); TAKE(P_ai, 9); TAKE(m, 18); TAKE(g6, 6); TAKE(bias, 6); TAKE(e, 6); TAKE(scal, 4);
    TAKE(m_out, 18 * nc); TAKE(w, 6 * ncol); TAKE(qdd, ncol); TAKE(eff, ncol); TAKE(a_out, 6 * ncol * (nc + 1));
    TAKE(K, 36); TAKE(k, 6); TAKE(X, nw * (1 + na)); TAKE(A, nw * nw); TAKE(a_child, 6 * nc);
    TAKE(W_l, 6); TAKE(W_r, 6);
    int n = B[I_FLEX] ? B[I_MODES] : 0, fl = B[I_FLEX] != 0;
    TAKE(Mrr, 36 * fl); TAKE(Mre, 6 * n); TAKE(hr, 6 * fl); TAKE(fe, n); TAKE(Dres, 36 * fl);
    TAKE(nodes, fl * nc * flex_node_size(n)); TAKE(u, 6 * nc * fl); TAKE(eddot, n * ncol); TAKE(eddot_z, n);
#undef TAKE
}

/* Block.kinematics: m (the block's motion vector at its port, in its frame), P_ab, P_ai,
 * g6, bias = C(x') D x', e (joint terms of eqs. (17)/(24)), scal = [spring, q], m_out */
static void kinematics(const int *B, const double *par, const double *y, const double *m_par,
                       const double *m_par_r, WS *s)
{
    int type = B[I_TYPE];
    const double *x = y + B[I_STATE], *D = par + D_D, *ax = par + D_AXIS;
    double *m = s->m;
    memset(s->e, 0, 6 * sizeof(double));
    if (type == CLOSURE) {              /* W_l = K dx + D dx', W_r (LoopClosure.kinematics) */
        const double *ml = m_par, *mr = m_par_r;
        double Pl[9], Pr[9], R[9], dx[6], dxp[6], t[3], Wl[6], FT[6];
        dcm_from_euler(ml + 15, Pl);
        dcm_from_euler(mr + 15, Pr);
        for (int i = 0; i < 3; i++)                                        /* P_ar/al = Pl^T Pr */
            for (int j = 0; j < 3; j++)
                R[3 * i + j] = Pl[i] * Pr[j] + Pl[3 + i] * Pr[3 + j] + Pl[6 + i] * Pr[6 + j];
        mat3_vec(R, mr + 12, t);
        for (int i = 0; i < 3; i++)
            dx[i] = t[i] - ml[12 + i];
        rotation_vector(R, dx + 3);
        mat3_vec(R, mr + 6, t);
        for (int i = 0; i < 3; i++)
            dxp[i] = t[i] - ml[6 + i];
        mat3_vec(R, mr + 9, t);
        for (int i = 0; i < 3; i++)
            dxp[3 + i] = t[i] - ml[9 + i];
        mat6_vec(par + D_D, dx, Wl);
        mat6_vec(par + D_DINV, dxp, FT);                                   /* D dx' */
        for (int i = 0; i < 6; i++)
            Wl[i] += FT[i];
        cross(dx, Wl, t);                                                  /* -F, -T + dr x F */
        for (int i = 0; i < 3; i++) {
            FT[i] = -Wl[i];
            FT[3 + i] = -Wl[3 + i] + t[i];
        }
        mat3T_vec(R, FT, s->W_r);
        mat3T_vec(R, FT + 3, s->W_r + 3);
        memcpy(s->W_l, Wl, 6 * sizeof(double));
        return;
    }
    if (type == BASE || type == IMPOSED) {
        dcm_from_quat(x + 9, s->P_ai);
        memcpy(s->P_ab, s->P_ai, 9 * sizeof(double));
        memset(m, 0, 6 * sizeof(double));
        memcpy(m + 6, x, 6 * sizeof(double));
        mat3T_vec(s->P_ai, x + 6, m + 12);                                /* P_b/i^T [IP]_Ri */
        euler_angles(s->P_ai, m + 15);
    } else if (type == REVOLUTE) {
        double R[9], c[3];
        axis_rotation(ax, x[0], R);
        mat3_mul(par + D_MOUNT, R, s->P_ab);                               /* eq. (16) */
        motion_in_frame(m_par, s->P_ab, m, s->P_ai);
        cross(ax, m + 6, c);                                               /* eq. (17) */
        s->e[0] = -x[1] * c[0]; s->e[1] = -x[1] * c[1]; s->e[2] = -x[1] * c[2];
        cross(ax, m + 9, c);
        s->e[3] = -x[1] * c[0]; s->e[4] = -x[1] * c[1]; s->e[5] = -x[1] * c[2];
        for (int i = 0; i < 3; i++)
            m[9 + i] += x[1] * ax[i];
        s->scal[0] = -par[D_K] * x[0] - par[D_DAMP] * x[1];
    } else if (type == PRISMATIC) {
        double r[3] = {-x[0] * ax[0], -x[0] * ax[1], -x[0] * ax[2]}, tw[6], c[3];
        memcpy(s->P_ab, par + D_MOUNT, 9 * sizeof(double));
        motion_in_frame(m_par, s->P_ab, m, s->P_ai);
        tau_vec(r, m + 6, tw);                                             /* eq. (24) */
        memcpy(m + 6, tw, 6 * sizeof(double));
        for (int i = 0; i < 3; i++) {
            m[6 + i] += x[1] * ax[i];
            m[12 + i] += x[0] * ax[i];
        }
        cross(ax, m + 9, c);
        s->e[0] = -x[1] * c[0]; s->e[1] = -x[1] * c[1]; s->e[2] = -x[1] * c[2];
        s->scal[0] = -par[D_K] * x[0] - par[D_DAMP] * x[1];
        s->scal[1] = x[0];
    } else {                                                               /* WELDED */
        memcpy(s->P_ab, par + D_MOUNT, 9 * sizeof(double));
        motion_in_frame(m_par, s->P_ab, m, s->P_ai);
    }
    double Dx[6];
    memset(s->g6, 0, 6 * sizeof(double));
    mat3T_vec(s->P_ai, par + D_G, s->g6);                                  /* P_a/i^T g, eq. (11) */
    if (B[I_FLEX]) {                                                       /* eqs. (F7)-(F12) */
        FlexData fd = flex_data(par + D_PC + 3 * B[I_NC], B[I_MODES], B[I_NC]);
        flex_kinematics(&fd, D, par + D_PC, x + own_states(type), m, s->P_ai, s->Mrr, s->Mre, s->hr, s->fe,
                        s->Dres, s->nodes, s->m_out, s->u);
        return;
    }
    mat6_vec(D, m + 6, Dx);
    C_times(m + 6, Dx, s->bias);                                           /* eq. (7) */
    for (int i = 0; i < B[I_NC]; i++) {                                    /* upsilon, eq. (14) */
        const double *PC = par + D_PC + 3 * i;
        double r[3] = {-PC[0], -PC[1], -PC[2]}, *mc = s->m_out + 18 * i;
        memset(mc, 0, 6 * sizeof(double));
        tau_vec(r, m + 6, mc + 6);
        for (int j = 0; j < 3; j++) {
            mc[12 + j] = m[12 + j] + PC[j];
            mc[15 + j] = m[15 + j];
        }
    }
}

static int solve(int n, int m, double *A, double *Bm);

/* The wrench the body needs at P for the acceleration a_hat = x'dot - [g; 0] (W), on column f
 * (1: the affine part, 0: a linear one) with the children's wrenches w_c (NULL: the constant one
 * times f): D_P a_hat + C(x') D_P x' - sum tau^T w (eq. (11), eq. (13)), or a flexible body's
 * eq. (F15), which gives its modal accelerations too (eddot). */
static void needed(const int *B, const int *I, const double *par, const double *const *ptr, const WS *s,
                   double f, const double *a_hat, const double *const *w_c, double *W, double *eddot)
{
    int nc = B[I_NC];
    const double *cw[nc > 0 ? nc : 1];
    for (int i = 0; i < nc; i++)
        cw[i] = w_c[i] ? NULL : ptr[I[B[I_CHILD] + 2 * i + 1]];
    if (B[I_FLEX]) {
        int n = B[I_MODES];
        FlexData fd = flex_data(par + D_PC + 3 * nc, n, nc);
        double Wc[6], Q[n + 1];
        flex_children(&fd, s->nodes, w_c, cw, f, Wc, Q);
        flex_needed(n, s->Mrr, s->Mre, s->hr, s->fe, f, a_hat, Wc, Q, W, eddot);
        return;
    }
    double Wc[6] = {0}, Da[6];
    for (int i = 0; i < nc; i++) {                                         /* eq. (13) */
        const double *PC = par + D_PC + 3 * i;
        double r[3] = {-PC[0], -PC[1], -PC[2]}, wi[6], fw[6];
        for (int k = 0; k < 6; k++)
            fw[k] = w_c[i] ? w_c[i][k] : f * cw[i][k];
        tauT_vec(r, fw, wi);
        for (int k = 0; k < 6; k++)
            Wc[k] += wi[k];
    }
    mat6_vec(par + D_D, a_hat, Da);
    for (int k = 0; k < 6; k++)
        W[k] = Da[k] + f * s->bias[k] - Wc[k];
}

/* Block.accelerations on column j: f = 1 for the affine part (column 0), 0 for the linear part.
 * Inputs: a_p (6) and the children's wrenches (6 each, NULL: the constant one times f).
 * Outputs: w (the wrench on the parent, in its frame; an imposed-motion base's p.w), *qdd,
 * *eff (an inverse joint's effort), a_out (6 per child, then a base's own acceleration at
 * slot nc), a flexible body's modal accelerations eddot. */
static void accelerations(const int *B, const int *I, const double *par, const double *const *ptr,
                          const WS *s, double f, const double *a_p, const double *const *w_c,
                          double *w, double *qdd, double *eff, double *a_out, double *eddot)
{
    int type = B[I_TYPE], nc = B[I_NC];
    const double *ax = par + D_AXIS, *P = s->P_ab;
    double a_A[6], t[6], W[6], u[6];
    *qdd = *eff = 0.0;
    if (type == CLOSURE) {                  /* no acceleration: the wrench on l in w, on r in a_out */
        for (int k = 0; k < 6; k++) {
            w[k] = f * s->W_l[k];
            a_out[k] = f * s->W_r[k];
        }
        return;
    }
    if (type == IMPOSED) {                                                 /* eq. (11), Fig. 1 */
        const double *pa = B[I_EXT] >= 0 ? ptr[B[I_EXT]] : NULL;
        for (int k = 0; k < 6; k++)
            a_A[k] = pa ? f * pa[k] : 0.0;
        for (int k = 0; k < 6; k++)
            u[k] = a_A[k] - f * s->g6[k];
        needed(B, I, par, ptr, s, f, u, w_c, w, eddot);                    /* W_./B,P */
        memcpy(a_out + 6 * nc, a_A, 6 * sizeof(double));
    } else if (type == BASE) {                                             /* eq. (11) solved */
        const double *ext = B[I_EXT] >= 0 ? ptr[B[I_EXT]] : NULL;
        double we[6] = {0};
        if (ext) {
            if (B[I_INERTIAL]) {
                mat3T_vec(s->P_ai, ext, we);
                mat3T_vec(s->P_ai, ext + 3, we + 3);
            } else {
                memcpy(we, ext, 6 * sizeof(double));
            }
        }
        if (B[I_FLEX]) {                   /* D_res a_hat = W_ext - W(0), eq. (F16) */
            double zero[6] = {0}, W0[6], A[36];
            needed(B, I, par, ptr, s, f, zero, w_c, W0, eddot);
            for (int k = 0; k < 6; k++)
                a_A[k] = f * we[k] - W0[k];
            memcpy(A, s->Dres, sizeof A);
            if (solve(6, 1, A, a_A))
                a_A[0] = a_A[0] * NAN;     /* singular: not finite, the loop says so */
            needed(B, I, par, ptr, s, f, a_A, w_c, W0, eddot);
        } else {
            double tot[6], Wc[6] = {0};
            for (int i = 0; i < nc; i++) {                                 /* eq. (13) */
                const double *PC = par + D_PC + 3 * i;
                double r[3] = {-PC[0], -PC[1], -PC[2]}, wi[6], fw[6];
                const double *cw = w_c[i] ? w_c[i] : ptr[I[B[I_CHILD] + 2 * i + 1]];
                for (int k = 0; k < 6; k++)
                    fw[k] = w_c[i] ? cw[k] : f * cw[k];
                tauT_vec(r, fw, wi);
                for (int k = 0; k < 6; k++)
                    Wc[k] += wi[k];
            }
            for (int k = 0; k < 6; k++)
                tot[k] = f * we[k] + Wc[k] - f * s->bias[k];
            mat6_vec(par + D_DINV, tot, a_A);
        }
        for (int k = 0; k < 6; k++)
            a_A[k] += f * s->g6[k];
        memcpy(a_out + 6 * nc, a_A, 6 * sizeof(double));
    } else {
        double a_B[6], beta[6];
        mat3T_vec(P, a_p, a_B);                                            /* P2^T a_p */
        mat3T_vec(P, a_p + 3, a_B + 3);
        if (type == PRISMATIC) {                                           /* tau_{-x t~} a_P0, eq. (24) */
            double r[3] = {-s->scal[1] * ax[0], -s->scal[1] * ax[1], -s->scal[1] * ax[2]};
            tau_vec(r, a_B, t);
            memcpy(a_B, t, 6 * sizeof(double));
        }
        if (type == WELDED) {
            memcpy(a_A, a_B, 6 * sizeof(double));
        } else {
            double s_beta, tau = B[I_TAU] >= 0 ? ptr[B[I_TAU]][0] : 0.0, J = par[D_J], sc[6] = {0};
            memcpy(sc + (type == REVOLUTE ? 3 : 0), ax, 3 * sizeof(double));   /* the joint's unit screw s */
            for (int k = 0; k < 6; k++)
                u[k] = a_B[k] - f * s->g6[k] + f * s->e[k];
            needed(B, I, par, ptr, s, f, u, w_c, beta, eddot);             /* eq. (21) / eq. (27) */
            if (type == REVOLUTE)
                s_beta = ax[0] * beta[3] + ax[1] * beta[4] + ax[2] * beta[5];
            else
                s_beta = ax[0] * beta[0] + ax[1] * beta[1] + ax[2] * beta[2];
            if (B[I_FLEX]) {                                               /* s^T D_res s, eq. (F16) */
                double Ds[6];
                mat6_vec(s->Dres, sc, Ds);
                J = 0.0;
                for (int k = 0; k < 6; k++)
                    J += sc[k] * Ds[k];
            }
            if (B[I_INVERSE]) {                                            /* eq. (21) / eq. (27) */
                *qdd = f * tau;                                            /* the input is joint.qdd */
                *eff = J * *qdd + s_beta - f * s->scal[0];
            } else {
                *qdd = (f * (tau + s->scal[0]) - s_beta) / J;              /* eq. (22) / eq. (28) */
            }
            for (int k = 0; k < 6; k++)
                a_A[k] = a_B[k] + f * s->e[k];                             /* eq. (17) / eq. (24) */
            for (int k = 0; k < 3; k++)
                a_A[(type == REVOLUTE ? 3 : 0) + k] += ax[k] * *qdd;
        }
        for (int k = 0; k < 6; k++)
            u[k] = a_A[k] - f * s->g6[k];
        needed(B, I, par, ptr, s, f, u, w_c, t, eddot);                    /* eq. (15) / (18) / (25) */
        for (int k = 0; k < 6; k++)
            W[k] = -t[k];
        if (type == PRISMATIC) {                                           /* eq. (29) */
            double r[3] = {-s->scal[1] * ax[0], -s->scal[1] * ax[1], -s->scal[1] * ax[2]};
            tauT_vec(r, W, t);
            memcpy(W, t, 6 * sizeof(double));
        }
        mat3_vec(P, W, w);                                                 /* P2 W */
        mat3_vec(P, W + 3, w + 3);
    }
    for (int i = 0; i < nc; i++) {                                         /* eq. (14) / eq. (23) / eq. (F12) */
        if (B[I_FLEX]) {
            flex_child_acceleration(B[I_MODES], s->nodes + flex_node_size(B[I_MODES]) * i, f, a_A, eddot,
                                    a_out + 6 * i);
            continue;
        }
        const double *PC = par + D_PC + 3 * i;
        double r[3] = {-PC[0], -PC[1], -PC[2]};
        tau_vec(r, a_A, a_out + 6 * i);
    }
}

/* A X = B, A (n, n) and B (n, m) row-major, by Gaussian elimination with partial pivoting
 * (both overwritten, X in B); returns 1 if A is singular */
static int solve(int n, int m, double *A, double *Bm)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++)
            if (fabs(A[n * r + c]) > fabs(A[n * p + c]))
                p = r;
        if (A[n * p + c] == 0.0)
            return 1;
        if (p != c) {
            for (int j = 0; j < n; j++) { double t = A[n * c + j]; A[n * c + j] = A[n * p + j]; A[n * p + j] = t; }
            for (int j = 0; j < m; j++) { double t = Bm[m * c + j]; Bm[m * c + j] = Bm[m * p + j]; Bm[m * p + j] = t; }
        }
        for (int r = c + 1; r < n; r++) {
            double l = A[n * r + c] / A[n * c + c];
            if (l == 0.0)
                continue;
            for (int j = c; j < n; j++)
                A[n * r + j] -= l * A[n * c + j];
            for (int j = 0; j < m; j++)
                Bm[m * r + j] -= l * Bm[m * c + j];
        }
    }
    for (int c = n - 1; c >= 0; c--)
        for (int j = 0; j < m; j++) {
            double v = Bm[m * c + j];
            for (int k = c + 1; k < n; k++)
                v -= A[n * c + k] * Bm[m * k + j];
            Bm[m * c + j] = v / A[n * c + c];
        }
    return 0;
}

/* Rows row0 .. row0 + 5 of H = [g, G_a, G_w] (eq. (13), eq. (14)): a child's wrench w = K a + k
 * (K NULL: the constant k) of the acceleration a the block sends to its child slot, that
 * acceleration on every column j; g and G_a into X (nw x m), 1 - G_w into A (nw x nw) */
static void condense_rows(const WS *s, int nc, int ncol, int m, int nw, int slot, int row0, const double *K,
                          const double *k)
{
    for (int r = 0; r < 6; r++) {
        int row = row0 + r;
        for (int j = 0; j < ncol; j++) {
            const double *a = s->a_out + 6 * (nc + 1) * j + 6 * slot;
            double v = 0.0;
            for (int q = 0; K && q < 6; q++)
                v += K[6 * r + q] * a[q];
            if (j == 0)
                s->X[m * row] = v + k[r];
            else if (j < m)
                s->X[m * row + j] = v;
            else
                s->A[nw * row + (j - m)] = -v;
        }
        s->A[nw * row + row] += 1.0;
    }
}

/* the size of the workspace of nb blocks (doubles) */
int titop_workspace(int nb, const int *I)
{
    int total = 0;
    for (int b = 0; b < nb; b++)
        total += ws_size(I + NI * b, I);
    return total;
}

/* block b's motion vector at its port, in its frame (WS.m, 18 values: the body's pose and twist
 * that the inertial record outputs are computed from), where titop_evaluate leaves it in ws */
double *titop_motion(int b, const int *I, double *ws)
{
    WS s;
    for (int k = 0; k < b; k++)
        ws += ws_size(I + NI * k, I);
    ws_layout(I + NI * b, I, ws, &s);
    return s.m;
}

/* ydot at y, and with out (else NULL) every block's outputs in turn, as Block.outputs_spec
 * orders them: p.w (not for a base), ci.m (18 each), then joint.q = [qdd, qd, q] (joints)
 * or p.m (a base). Returns 0, or 1: the loop is singular, 2: its solution is not finite. */
int titop_evaluate(int nb, const int *I, const double *par, const double *const *ptr, double *ws,
                   const double *y, double *ydot, double *out)
{
    WS S[nb > 0 ? nb : 1];
    double *p = ws;
    for (int b = 0; b < nb; b++) {
        ws_layout(I + NI * b, I, p, &S[b]);
        p += ws_size(I + NI * b, I);
    }
    /* 1. kinematics, parents first (blocks are in tree order) */
    for (int b = 0; b < nb; b++) {
        const int *B = I + NI * b;
        const double *m_par = B[I_PARENT] >= 0 ? S[B[I_PARENT]].m_out + 18 * B[I_SLOT]
                                               : (B[I_MCONST] >= 0 ? ptr[B[I_MCONST]] : NULL);
        const double *m_par_r = B[I_PARENT_R] >= 0 ? S[B[I_PARENT_R]].m_out + 18 * B[I_SLOT_R]
                                                   : (B[I_MCONST_R] >= 0 ? ptr[B[I_MCONST_R]] : NULL);
        kinematics(B, par + B[I_DPAR], y, m_par, m_par_r, &S[b]);
    }
    /* 2. upward pass: every block's columns, its children's maps condensed, its own map */
    for (int b = nb - 1; b >= 0; b--) {
        const int *B = I + NI * b;
        const WS *s = &S[b];
        int nc = B[I_NC], ncol = n_cols(B, I), na = n_a(B), nl = n_linked(B, I), nw = n_w(B, I);
        const double *mc = B[I_PARENT] < 0 && B[I_MCONST] >= 0 ? ptr[B[I_MCONST]] : NULL;
        for (int j = 0; j < ncol; j++) {
            double a_p[6] = {0}, unit[6] = {0};
            const double *w_c[nc > 0 ? nc : 1];
            if (j == 0 && mc)
                memcpy(a_p, mc, 6 * sizeof(double));                      /* a constant parent acceleration */
            if (j >= 1 && j <= na)
                a_p[j - 1] = 1.0;
            for (int i = 0, l = 0; i < nc; i++) {    /* w on the first linked child, 0 on the others; */
                static const double zero[6] = {0};    /* a flexible body: 6 columns per linked child */
                w_c[i] = NULL;
                if (I[B[I_CHILD] + 2 * i] < 0)
                    continue;
                w_c[i] = zero;
                int first = 1 + na + (B[I_FLEX] ? 6 * l : 0);
                if ((B[I_FLEX] || l == 0) && j >= first && j < first + 6) {
                    unit[j - first] = 1.0;
                    w_c[i] = unit;
                }
                l++;
            }
            accelerations(B, I, par + B[I_DPAR], ptr, s, j == 0 ? 1.0 : 0.0, a_p, w_c, s->w + 6 * j,
                          s->qdd + j, s->eff + j, s->a_out + 6 * (nc + 1) * j, s->eddot + B[I_MODES] * j);
        }
        if (nl && B[I_FLEX]) {
            /* A flexible body: each linked child's own wrench w_l = K_l a_l + k_l, a_l its node's
             * acceleration, affine in z (eq. (F12)): H = [g, G_a, G_w] over all of them, then
             * (1 - G_w) [m, M] = [g, G_a] (6 per linked child) */
            int m = 1 + na;
            memset(s->A, 0, nw * nw * sizeof(double));
            for (int i = 0, l = 0; i < nc; i++) {
                int c = I[B[I_CHILD] + 2 * i];
                if (c < 0)
                    continue;
                const double *K = S[c].K, *k = S[c].k;
                if (I[NI * c + I_TYPE] == CLOSURE) {   /* a constant wrench: on its l or its r part */
                    K = NULL;
                    k = I[NI * c + I_PARENT] == b && I[NI * c + I_SLOT] == i ? S[c].W_l : S[c].W_r;
                }
                condense_rows(s, nc, ncol, m, nw, i, 6 * l, K, k);
                l++;
            }
            if (solve(nw, m, s->A, s->X))
                return 1;
        } else if (nl) {
            /* The children as one wrench w at the first linked child f's port, tau_CfP^T w = sum_i
             * tau_CiP^T w_i, each child's map w_i = K_i a_i + k_i and a_i = T_i a_f, T_i = tau_CiP
             * tau_CfP^-1 = tau(PC_f - PC_i) (eqs. (13), (14), (23)): w = K1 a_f + k1 with
             * K1 = sum T_i^T K_i T_i, k1 = sum T_i^T k_i. Then H = [g, G_a, G_w]:
             * w = g + G_a a_p + G_w w, (1 - G_w) [m, M] = [g, G_a], 6 x 6 for any number of children. */
            const double *PC = par + B[I_DPAR] + D_PC;
            double K1[36], k1[6];
            const double *Kf = NULL, *kf = k1;          /* the map of w: one child's own, or the sums */
            if (nl > 1) {
                memset(K1, 0, sizeof K1);
                memset(k1, 0, sizeof k1);
            }
            int m = 1 + na, f = -1;
            for (int i = 0; i < nc; i++) {
                int c = I[B[I_CHILD] + 2 * i];
                if (c < 0)
                    continue;
                if (f < 0)
                    f = i;
                const double *K = S[c].K, *k = S[c].k;
                if (I[NI * c + I_TYPE] == CLOSURE) {   /* a constant wrench: on its l or its r part */
                    K = NULL;
                    k = I[NI * c + I_PARENT] == b && I[NI * c + I_SLOT] == i ? S[c].W_l : S[c].W_r;
                }
                if (nl == 1) {                                                 /* T_f = 1 */
                    Kf = K;
                    kf = k;
                    break;
                }
                double r[3] = {PC[3 * f] - PC[3 * i], PC[3 * f + 1] - PC[3 * i + 1], PC[3 * f + 2] - PC[3 * i + 2]};
                double t[6];
                tauT_vec(r, k, t);
                for (int q = 0; q < 6; q++)
                    k1[q] += t[q];
                for (int q = 0; K && q < 6; q++) {                             /* column q of T_i^T K_i T_i */
                    double e[6] = {0}, a[6], Ka[6];
                    e[q] = 1.0;
                    tau_vec(r, e, a);
                    for (int row = 0; row < 6; row++) {
                        Ka[row] = 0.0;
                        for (int p2 = 0; p2 < 6; p2++)
                            Ka[row] += K[6 * row + p2] * a[p2];
                    }
                    tauT_vec(r, Ka, t);
                    for (int row = 0; row < 6; row++)
                        K1[6 * row + q] += t[row];
                }
                if (K)
                    Kf = K1;
            }
            memset(s->A, 0, 36 * sizeof(double));
            condense_rows(s, nc, ncol, m, 6, f, 0, Kf, kf);
            if (solve(6, m, s->A, s->X))
                return 1;
        }
        if (na) {               /* W_p = K a_p + k: K = L_a + L_w M, k = b + L_w m */
            int m = 1 + na;
            for (int r = 0; r < 6; r++) {
                s->k[r] = s->w[r];
                for (int q = 0; q < 6; q++)
                    s->K[6 * r + q] = s->w[6 * (1 + q) + r];
                for (int l = 0; l < nw; l++) {
                    double Lw = s->w[6 * (m + l) + r];
                    s->k[r] += Lw * s->X[m * l];
                    for (int q = 0; q < 6; q++)
                        s->K[6 * r + q] += Lw * s->X[m * l + 1 + q];
                }
            }
        }
    }
    /* 3. downward pass: z = [a_p; w = m + M a_p], outputs b + L z, state derivatives */
    double check = 0.0;
    for (int b = 0; b < nb; b++) {
        const int *B = I + NI * b;
        WS *s = &S[b];
        int nc = B[I_NC], na = n_a(B), nw = n_w(B, I), m = 1 + na, ncol = n_cols(B, I), n = B[I_MODES];
        double z[6 + nw + 1], qdd;
        if (na)
            memcpy(z, S[B[I_PARENT]].a_child + 6 * B[I_SLOT], 6 * sizeof(double));
        for (int l = 0; l < nw; l++) {
            double v = s->X[m * l];
            for (int q = 0; q < na; q++)
                v += s->X[m * l + 1 + q] * z[q];
            z[na + l] = v;
        }
        for (int j = 0; j < na + nw; j++)
            check += z[j];
        qdd = s->qdd[0];
        for (int j = 1; j < ncol; j++)
            qdd += s->qdd[j] * z[j - 1];
        for (int k = 0; B[I_FLEX] && k < n; k++) {                         /* etaddot, eq. (F14) */
            double v = s->eddot[k];
            for (int j = 1; j < ncol; j++)
                v += s->eddot[n * j + k] * z[j - 1];
            s->eddot_z[k] = v;
            check += v;
        }
        double a_self[6];
        for (int i = 0; i <= nc; i++) {
            double *dst = i < nc ? s->a_child + 6 * i : a_self;
            for (int r = 0; r < 6; r++) {
                double v = s->a_out[6 * i + r];
                for (int j = 1; j < ncol; j++)
                    v += s->a_out[6 * (nc + 1) * j + 6 * i + r] * z[j - 1];
                dst[r] = v;
            }
        }
        const double *x = y + B[I_STATE];
        if (out && B[I_TYPE] == CLOSURE) {                                 /* l.w, r.w */
            memcpy(out, s->w, 6 * sizeof(double));
            memcpy(out + 6, s->a_out, 6 * sizeof(double));
            out += 12;
        } else if (out) {
            int base = B[I_TYPE] == BASE || B[I_TYPE] == IMPOSED;
            double pw[6];
            for (int r = 0; r < 6; r++) {                                  /* p.w */
                double v = s->w[r];
                for (int j = 1; j < ncol; j++)
                    v += s->w[6 * j + r] * z[j - 1];
                pw[r] = v;
            }
            if (!base) {
                memcpy(out, pw, 6 * sizeof(double));
                out += 6;
            }
            for (int i = 0; i < nc; i++, out += 18) {                      /* ci.m */
                memcpy(out, s->m_out + 18 * i, 18 * sizeof(double));
                memcpy(out, s->a_child + 6 * i, 6 * sizeof(double));
            }
            if (base) {                                                    /* p.m, then p.w */
                memcpy(out, s->m, 18 * sizeof(double));
                memcpy(out, a_self, 6 * sizeof(double));
                out += 18;
                if (B[I_TYPE] == IMPOSED) {
                    memcpy(out, pw, 6 * sizeof(double));
                    out += 6;
                }
            } else if (B[I_TYPE] != WELDED) {                              /* joint.q, joint.tau */
                *out++ = qdd;
                *out++ = x[1];
                *out++ = x[0];
                if (B[I_INVERSE]) {
                    double v = s->eff[0];
                    for (int j = 1; j < ncol; j++)
                        v += s->eff[j] * z[j - 1];
                    *out++ = v;
                }
            }
            if (B[I_FLEX]) {                                               /* ci.u, eq. (F13) */
                memcpy(out, s->u, 6 * nc * sizeof(double));
                out += 6 * nc;
            }
        }
        if (!ydot)
            continue;
        double *xd = ydot + B[I_STATE];
        if (B[I_TYPE] == BASE || B[I_TYPE] == IMPOSED) {   /* x'dot_P, P_b/i v_P, 1/2 q (x) [0, omega] */
            const double *q = x + 9, *om = x + 3;
            memcpy(xd, a_self, 6 * sizeof(double));
            mat3_vec(s->P_ai, x, xd + 6);
            xd[9] = 0.5 * (-q[1] * om[0] - q[2] * om[1] - q[3] * om[2]);
            xd[10] = 0.5 * (q[0] * om[0] + q[2] * om[2] - q[3] * om[1]);
            xd[11] = 0.5 * (q[0] * om[1] + q[3] * om[0] - q[1] * om[2]);
            xd[12] = 0.5 * (q[0] * om[2] + q[1] * om[1] - q[2] * om[0]);
        } else if (B[I_TYPE] == REVOLUTE || B[I_TYPE] == PRISMATIC) {
            xd[0] = x[1];
            xd[1] = qdd;
        }
        if (B[I_FLEX]) {                                                   /* eta, etadot */
            int own = own_states(B[I_TYPE]);
            memcpy(xd + own, x + own + n, n * sizeof(double));
            memcpy(xd + own + n, s->eddot_z, n * sizeof(double));
        }
    }
    return isfinite(check) ? 0 : 2;
}

/* Dormand-Prince 5(4) over a duration h of ydot = f(ctx, t, y) from the time t0 (each stage at
 * t + c_i hs; c NULL: autonomous, t is 0): the states y (n of them) advanced in place, step for
 * step as titop_fmu/integrators.py's dopri5, whose tableau it is given (A: 6x6 row-major, E: 7,
 * c: 7) so that it has one source. *h_guess (0: none) is read and replaced by the next step's
 * guess; K is 7n, xi n doubles of scratch. Returns 0, or f's non-zero code, 3: a non-finite
 * error estimate, 4: the step size fell below 1e-14 h, 5: more than max_steps steps. */
int titop_dopri5(int n, double *y, double t0, double h, double rtol, double atol, double *h_guess, int max_steps,
                 const double *A, const double *E, const double *c, double *K, double *xi,
                 int (*f)(void *ctx, double t, const double *y, double *ydot), void *ctx)
{
    if (h <= 0 || n == 0)
        return 0;
    double t = 0.0, hs = (*h_guess > 0 && *h_guess < h) ? *h_guess : h, h_last = 0.0;
    double k1[n];
    int code = f(ctx, c ? t0 : 0.0, y, k1);
    if (code)
        return code;
    for (int step = 0; step < max_steps; step++) {
        double h_free = hs;                 /* the controller's step, before the end cuts it */
        if (t + hs >= h * (1 - 1e-12))
            hs = h - t;
        memcpy(K, k1, n * sizeof(double));
        for (int i = 1; i < 7; i++) {
            for (int k = 0; k < n; k++) {
                double s = 0.0;
                for (int j = 0; j < i; j++)
                    s += A[6 * (i - 1) + j] * K[n * j + k];
                xi[k] = y[k] + hs * s;
            }
            if ((code = f(ctx, c ? t0 + (t + c[i] * hs) : 0.0, xi, K + n * i)))
                return code;
        }
        double sum = 0.0;                   /* xi is the 5th-order solution (stage 7, FSAL) */
        for (int k = 0; k < n; k++) {
            double e = 0.0;
            for (int j = 0; j < 7; j++)
                e += E[j] * K[n * j + k];
            double q = hs * e / (atol + rtol * fmax(fabs(y[k]), fabs(xi[k])));
            sum += q * q;
        }
        double err = sqrt(sum / n);
        if (!isfinite(err))
            return 3;
        if (err <= 1.0) {
            t += hs;
            memcpy(y, xi, n * sizeof(double));
            memcpy(k1, K + 6 * n, n * sizeof(double));
            double factor = err == 0 ? 5.0 : fmin(5.0, 0.9 * pow(err, -0.2));
            h_last = hs;
            hs *= factor;
            if (t >= h * (1 - 1e-12)) {
                /* a last step cut short by the end (a sliver, at times) does not shrink the next call's */
                *h_guess = fmax(h_free, fmin(hs, h_last * 5.0));
                return 0;
            }
        } else {
            hs *= fmax(0.2, 0.9 * pow(err, -0.2));
            if (hs < 1e-14 * fmax(1.0, h))
                return 4;
        }
    }
    return 5;
}

/* the tree's state derivatives as titop_dopri5 asks them (autonomous) */
typedef struct {
    int nb;
    const int *I;
    const double *par;
    const double *const *ptr;
    double *ws;
} Tree;

static int tree_derivatives(void *ctx, double t, const double *y, double *ydot)
{
    const Tree *tree = (const Tree *)ctx;
    (void)t;
    return titop_evaluate(tree->nb, tree->I, tree->par, tree->ptr, tree->ws, y, ydot, NULL);
}

/* Dormand-Prince 5(4) over a communication step h of the tree with the inputs held
 * (titop_dopri5; its codes, 1 and 2 as titop_evaluate's) */
int titop_step(int nb, const int *I, const double *par, const double *const *ptr, double *ws, int n,
               double *y, double h, double rtol, double atol, double *h_guess, int max_steps,
               const double *A, const double *E, double *K, double *xi)
{
    Tree tree = {nb, I, par, ptr, ws};
    return titop_dopri5(n, y, 0.0, h, rtol, atol, h_guess, max_steps, A, E, NULL, K, xi, tree_derivatives, &tree);
}
