/* The model of a standalone TITOP FMU (model.h): the kernel's tree of the FMU's blocks,
 * their data computed from the FMI parameters with the Python blocks' checks and messages
 * (titop_fmu/blocks/: body.py, floating_base.py, joints.py, closure.py; the catalog's
 * ext_frame, rtol and atol; a flexible body's in flexible_body.c), the kernel's evaluation and DOPRI5 step; an assembly's tree closed
 * by control blocks (control.c) and driven by time signals, as titop_fmu/titop/closedloop.py
 * evaluates it (see "Closed loops" below).
 *
 * kernel.c is included as it is (one translation unit: its spatial algebra serves here too);
 * its tables are laid out as kernel.py's _Tree lays them. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "kernel.c"

struct TitopModel {
    const TitopModelSpec *spec;
    int *ints;             /* NI per block, then 2 per child (kernel.c) */
    double *par;           /* the blocks' data (kernel.c's D_ layout) */
    const double **ptr;    /* the constant inputs: into u */
    double *u;             /* the inputs the kernel reads */
    double *out;           /* the kernel's outputs (every block's) */
    double *PX;            /* per FMU output, the point of an inertial quantity (3) */
    int *motion;           /* per block, where the kernel's workspace keeps its motion vector at P */
    double *ws, *K, *xi;   /* the kernel's workspace, titop_step's scratch */
    int n_par, n_ptr;      /* sizes of par and ptr (the entries set) */
    double *dual;          /* titop_model_derivatives' dual numbers (allocated on first use), or NULL */
    double *V;             /* a closed loop's value vector */
    double *d;             /* its discrete states after the samples of the start (scratch) */
    double *cu, *cy;       /* a control block's inputs and outputs (scratch) */
    double *xs, *zs;       /* titop_model_step's and titop_model_event's copies of the states */
    double *PR;            /* per value the loop reads from the tree, the point of an inertial quantity (3) */
};

/* the forward-mode kernel (kernel_dual.cpp): a dual number is 1 + titop_dual_width() doubles, its
 * value then its tangents */
int titop_dual_width(void);
int titop_dual_workspace(int nb, const int *I);
int titop_dual_evaluate(int nb, const int *I, const double *par, const double *const *ptr, double *ws,
                        const double *y, double *ydot, double *out);

const char *titop_kernel_message(int code, int max_steps, char *buf)
{
    switch (code) {                                             /* kernel.py's _error */
    case 1: return "the block's joint acceleration is singular";
    case 2: return "the block's accelerations are not finite";
    case 3: return "non-finite state derivative during a step";
    case 4: return "step size underflow (below 1e-14 of the step) in a communication step";
    case 5:
        sprintf(buf, "more than %d internal steps in one communication step", max_steps);
        return buf;
    default: return "unknown kernel error";
    }
}

/* --- messages --------------------------------------------------------------------------- */

typedef struct {
    char *err;
    size_t n;
    const char *unit;      /* the unit of an assembly whose block is checked, or NULL */
} Err;

/* "parameter '<name>': <detail>" (an assembly's: '<unit>.<name>', as ParameterError.renamed) */
static int fail(Err *e, const char *parameter, const char *detail)
{
    snprintf(e->err, e->n, "parameter '%s%s%s': %s", e->unit ? e->unit : "", e->unit ? "." : "", parameter, detail);
    return 1;
}

/* "[a, b, c]": a Python list of floats */
static char *list_repr(const double *v, int n, char *buf)
{
    char r[32], *o = buf;
    *o++ = '[';
    for (int i = 0; i < n; i++)
        o += sprintf(o, "%s%s", i ? ", " : "", titop_repr(v[i], r));
    strcpy(o, "]");
    return buf;
}

/* --- the checks of body.py --------------------------------------------------------------- */

static int as_scalar(Err *e, const char *name, double v, int has_minimum, double minimum)
{
    char d[128], a[32], b[32];
    if (!isfinite(v)) {
        snprintf(d, sizeof d, "must be finite, got %s", titop_repr(v, a));
        return fail(e, name, d);
    }
    if (has_minimum && v < minimum) {
        snprintf(d, sizeof d, "must be >= %s, got %s", titop_repr(minimum, a), titop_repr(v, b));
        return fail(e, name, d);
    }
    return 0;
}

static int as_vector(Err *e, const char *name, const double *v, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(v[i])) {
            char d[400], l[300];
            snprintf(d, sizeof d, "must be finite, got %s", list_repr(v, n, l));
            return fail(e, name, d);
        }
    return 0;
}

/* the eigenvalues w (ascending) of the symmetric n x n matrix S: cyclic Jacobi, each rotation
 * applied in the accurate form (a_pp - t a_pq, a_qq + t a_pq, the others through tau = s / (1 + c);
 * Numerical Recipes, 11.1), exact on the small integer matrices of the tests */
static void eigvalsh(int n, const double *S, double *w)
{
    double A[36];
    memcpy(A, S, n * n * sizeof(double));
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0.0, all = 0.0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                all += A[n * i + j] * A[n * i + j];
                if (i != j)
                    off += A[n * i + j] * A[n * i + j];
            }
        if (off == 0.0 || off <= 1e-36 * all)
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                double apq = A[n * p + q];
                if (apq == 0.0)
                    continue;
                double theta = (A[n * q + q] - A[n * p + p]) / (2.0 * apq);
                double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
                double c = 1.0 / sqrt(t * t + 1.0), s = t * c, tau = s / (1.0 + c);
                A[n * p + p] -= t * apq;
                A[n * q + q] += t * apq;
                A[n * p + q] = A[n * q + p] = 0.0;
                for (int r = 0; r < n; r++) {
                    if (r == p || r == q)
                        continue;
                    double g = A[n * r + p], h = A[n * r + q];
                    A[n * r + p] = A[n * p + r] = g - s * (h + g * tau);
                    A[n * r + q] = A[n * q + r] = h + s * (g - h * tau);
                }
            }
    }
    for (int i = 0; i < n; i++)
        w[i] = A[n * i + i];
    for (int i = 1; i < n; i++)                           /* ascending */
        for (int j = i; j > 0 && w[j] < w[j - 1]; j--) {
            double t = w[j]; w[j] = w[j - 1]; w[j - 1] = t;
        }
}

static double max_abs(const double *A, int n)
{
    double m = 0.0;
    for (int i = 0; i < n; i++)
        m = fmax(m, fabs(A[i]));
    return m;
}

/* check_inertia: finite, symmetric, positive semi-definite; J symmetrised; a warning if the
 * principal moments violate the triangle inequality */
static int check_inertia(Err *e, const char *name, const double *in, double *J, double *eig,
                         void (*warn)(void *, const char *), void *env)
{
    char d[700];
    for (int i = 0; i < 9; i++)
        if (!isfinite(in[i]))
            return fail(e, name, "must be finite");
    double scale = fmax(1.0, max_abs(in, 9)), asym = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            asym = fmax(asym, fabs(in[3 * i + j] - in[3 * j + i]));
    if (asym > 1e-9 * scale) {
        char r[3][200];
        for (int i = 0; i < 3; i++)
            list_repr(in + 3 * i, 3, r[i]);
        snprintf(d, sizeof d, "inertia must be symmetric, got [%s, %s, %s]", r[0], r[1], r[2]);
        return fail(e, name, d);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            J[3 * i + j] = 0.5 * (in[3 * i + j] + in[3 * j + i]);
    eigvalsh(3, J, eig);
    if (eig[0] < -1e-9 * scale) {
        char l[120];
        snprintf(d, sizeof d, "inertia must be positive semi-definite, eigenvalues %s", list_repr(eig, 3, l));
        return fail(e, name, d);
    }
    if (eig[2] > eig[0] + eig[1] + 1e-9 * scale && warn) {
        double r6[3];
        char l[120];
        for (int i = 0; i < 3; i++)                            /* np.round(eig, 6) */
            r6[i] = nearbyint(eig[i] * 1e6) / 1e6;
        snprintf(d, sizeof d, "%s%s%s: principal moments %s violate the triangle inequality (no real mass "
                 "distribution has them); accepted as given", e->unit ? e->unit : "", e->unit ? ": " : "", name,
                 list_repr(r6, 3, l));
        warn(env, d);
    }
    return 0;
}

static int unit_axis(Err *e, const char *name, const double *v, double *axis)
{
    if (as_vector(e, name, v, 3))
        return 1;
    double n = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    if (n < 1e-12)
        return fail(e, name, "joint axis must be a non-zero vector");
    for (int i = 0; i < 3; i++)
        axis[i] = v[i] / n;
    return 0;
}

static int psd6(Err *e, const char *name, const double *M)
{
    for (int i = 0; i < 36; i++)
        if (!isfinite(M[i]))
            return fail(e, name, "expected a finite 6x6 matrix, got shape (6, 6)");
    double scale = fmax(1.0, max_abs(M, 36)), asym = 0.0, S[36], w[6];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            asym = fmax(asym, fabs(M[6 * i + j] - M[6 * j + i]));
            S[6 * i + j] = 0.5 * (M[6 * i + j] + M[6 * j + i]);
        }
    if (asym > 1e-9 * scale)
        return fail(e, name, "must be symmetric");
    eigvalsh(6, S, w);
    if (w[0] < -1e-9 * scale)
        return fail(e, name, "must be positive semi-definite");
    return 0;
}

/* --- the blocks' data -------------------------------------------------------------------- */

#include "flexible_body.c"     /* a flexible body's data and checks */

/* the smallest eigenvalue of the symmetric 6 x 6 matrix S */
static double smallest6(const double *S)
{
    double w[6];
    eigvalsh(6, S, w);
    return w[0];
}

/* C = op(A) B, 6 x 6, op(A) = A^T if transposed, else A */
static void mat6_mul(const double *A, int transposed, const double *B, double *C)
{
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++) {
            double s = 0.0;
            for (int k = 0; k < 6; k++)
                s += (transposed ? A[6 * k + i] : A[6 * i + k]) * B[6 * k + j];
            C[6 * i + j] = s;
        }
}

/* D_P = tau_BP^T diag(m 1, I_B) tau_BP, BP = -[PB] (spatial.dynamic_model, eq. (4)) */
static void dynamic_model(double m, const double *J, const double *com, double *D)
{
    double DB[36] = {0}, t[36] = {0}, tTD[36];
    double x = -com[0], y = -com[1], z = -com[2];
    for (int i = 0; i < 3; i++) {
        DB[7 * i] = m;
        for (int j = 0; j < 3; j++)
            DB[6 * (3 + i) + 3 + j] = J[3 * i + j];
    }
    for (int i = 0; i < 6; i++)
        t[7 * i] = 1.0;
    t[4] = -z; t[5] = y; t[9] = z; t[11] = -x; t[15] = -y; t[16] = x;   /* tau(BP), spatial.tau */
    mat6_mul(t, 1, DB, tTD);
    mat6_mul(tTD, 0, t, D);
}

/* the inverse of the 6 x 6 matrix D (LU with partial pivoting, kernel.c's solve) */
static int inverse6(const double *D, double *Dinv)
{
    double A[36];
    memcpy(A, D, sizeof A);
    memset(Dinv, 0, 36 * sizeof(double));
    for (int i = 0; i < 6; i++)
        Dinv[7 * i] = 1.0;
    return solve(6, 6, A, Dinv);
}

/* spatial.quat_from_dcm: Shepperd's method, w >= 0 */
static void quat_from_dcm(const double *P, double *q)
{
    double tr = P[0] + P[4] + P[8], c[4] = {tr, P[0], P[4], P[8]};
    int i = 0;
    for (int k = 1; k < 4; k++)
        if (c[k] > c[i])
            i = k;
    if (i == 0) {
        double w = 0.5 * sqrt(1.0 + tr);
        q[0] = w; q[1] = (P[7] - P[5]) / (4 * w); q[2] = (P[2] - P[6]) / (4 * w); q[3] = (P[3] - P[1]) / (4 * w);
    } else if (i == 1) {
        double x = 0.5 * sqrt(1.0 + 2 * P[0] - tr);
        q[0] = (P[7] - P[5]) / (4 * x); q[1] = x; q[2] = (P[1] + P[3]) / (4 * x); q[3] = (P[2] + P[6]) / (4 * x);
    } else if (i == 2) {
        double y = 0.5 * sqrt(1.0 + 2 * P[4] - tr);
        q[0] = (P[2] - P[6]) / (4 * y); q[1] = (P[1] + P[3]) / (4 * y); q[2] = y; q[3] = (P[5] + P[7]) / (4 * y);
    } else {
        double z = 0.5 * sqrt(1.0 + 2 * P[8] - tr);
        q[0] = (P[3] - P[1]) / (4 * z); q[1] = (P[2] + P[6]) / (4 * z); q[2] = (P[5] + P[7]) / (4 * z); q[3] = z;
    }
    if (q[0] < 0)
        for (int k = 0; k < 4; k++)
            q[k] = -q[k];
}

/* the kernel's data of block b (D_ layout of kernel.c) from the parameters, checked in the order
 * the Python block checks them (catalog.KINDS' build, then the block's __init__) */
static int block_data(const TitopBlockSpec *b, const double *par, double *d, Err *e,
                      void (*warn)(void *, const char *), void *env)
{
    const int *f = b->par;
#define P(field) (par + f[TITOP_P_##field])
    if (b->kind == TITOP_CLOSURE) {
        if (psd6(e, "K", P(KMAT)) || psd6(e, "D", P(DMAT)))
            return 1;
        memcpy(d + D_D, P(KMAT), 36 * sizeof(double));
        memcpy(d + D_DINV, P(DMAT), 36 * sizeof(double));
        return 0;
    }
    double mass, J[9], eig[3], Dres0[36];
    int flexible = b->modes >= 0;
    if (flexible) {                                                /* FlexibleBody */
        if (flexible_body(b, par, d, e, &mass, J, Dres0))
            return 1;
        eigvalsh(3, J, eig);
    } else {                                                       /* RigidBody */
        mass = *P(MASS);
        if (as_scalar(e, "mass", mass, 1, 0.0) || check_inertia(e, "inertia", P(INERTIA), J, eig, warn, env) ||
            as_vector(e, "com", P(COM), 3))
            return 1;
        for (int i = 0; i < b->n_children; i++) {
            char name[32];
            snprintf(name, sizeof name, "c%d.r", i + 1);
            if (as_vector(e, name, P(CHILDREN) + 3 * i, 3))
                return 1;
            memcpy(d + D_PC + 3 * i, P(CHILDREN) + 3 * i, 3 * sizeof(double));
        }
        dynamic_model(mass, J, P(COM), d + D_D);
    }
    if (b->kind == TITOP_BASE) {                                   /* catalog._ext_frame */
        double v = *P(EXT_FRAME);
        if (v != 0 && v != 1) {
            char detail[80];
            snprintf(detail, sizeof detail, "must be 0 (inertial) or 1 (body), got %d", (int)v);
            return fail(e, "ext_frame", detail);
        }
    }
    if (as_vector(e, "gravity", P(GRAVITY), 3))
        return 1;
    memcpy(d + D_G, P(GRAVITY), 3 * sizeof(double));
    if (b->kind == TITOP_BASE || b->kind == TITOP_IMPOSED) {     /* _Base */
        if (as_vector(e, "r0", P(R0), 3) || as_vector(e, "Theta0", P(THETA0), 3) ||
            as_vector(e, "twist0", P(TWIST0), 6))
            return 1;
        for (int i = 0; i < 3; i++)
            d[D_MOUNT + 4 * i] = 1.0;                              /* no mounting */
        if (b->kind == TITOP_BASE) {                               /* FloatingBase */
            char detail[80], r[32];
            if (mass <= 0) {
                snprintf(detail, sizeof detail, "a floating base needs a positive mass, got %s", titop_repr(mass, r));
                return fail(e, "mass", detail);
            }
            if (eig[0] <= 0)
                return fail(e, "inertia", "a floating base needs a positive definite inertia");
            if (flexible && b->modes && smallest6(Dres0) <= 1e-12 * mass)
                return fail(e, "mass", "a floating base needs a positive definite residual mass D_P - L^T L");
            if (!flexible)                                         /* a flexible base solves with D_res */
                inverse6(d + D_D, d + D_DINV);
        }
        return 0;
    }
    if (as_vector(e, "mount", P(MOUNT), 3))                        /* _MountedBody */
        return 1;
    dcm_from_euler(P(MOUNT), d + D_MOUNT);
    if (b->kind == TITOP_WELDED)
        return 0;
    double *axis = d + D_AXIS;                                     /* _JointBody */
    if (unit_axis(e, "axis", P(AXIS), axis) || as_scalar(e, "q0", *P(Q0), 0, 0) ||
        as_scalar(e, "qd0", *P(QD0), 0, 0) || as_scalar(e, "k", *P(K), 1, 0.0) || as_scalar(e, "d", *P(D), 1, 0.0))
        return 1;
    d[D_K] = *P(K);
    d[D_DAMP] = *P(D);
    if (b->kind == TITOP_REVOLUTE) {                               /* J_r = r6^T D_P r6, eq. (20) */
        double Jr = 0.0;
        for (int j = 0; j < 3; j++) {
            double s = 0.0;
            for (int i = 0; i < 3; i++)
                s += axis[i] * d[D_D + 6 * (3 + i) + 3 + j];
            Jr += s * axis[j];
        }
        if (Jr <= 1e-12 * fmax(1.0, mass))
            return fail(e, "inertia", "the apparent inertia J_r about the revolute axis is zero: the joint "
                        "acceleration is undefined");
        d[D_J] = Jr;
    } else {
        if (mass <= 0)
            return fail(e, "mass", "a prismatic body needs a positive mass (eq. (28) divides by it)");
        d[D_J] = mass;
    }
    if (flexible) {                                                /* FlexibleBody.check_joint, eq. (F16) */
        int o = b->kind == TITOP_REVOLUTE ? 3 : 0;                 /* s = [0; r] or [t; 0]: its half at o */
        double sDs = 0.0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                sDs += axis[i] * Dres0[6 * (o + i) + o + j] * axis[j];
        if (sDs <= 1e-12 * fmax(1.0, mass))
            return fail(e, b->kind == TITOP_REVOLUTE ? "inertia" : "mass", "the flexible body's residual inertia "
                        "along the joint is zero: the joint acceleration is undefined");
    }
    return 0;
#undef P
}

static int positive(Err *e, const char *name, double v)          /* catalog.positive */
{
    if (!(isfinite(v) && v > 0)) {
        char d[80], r[32];
        snprintf(d, sizeof d, "must be a finite positive number, got %s", titop_repr(v, r));
        return fail(e, name, d);
    }
    return 0;
}

/* --- the model ---------------------------------------------------------------------------- */

static int n_data(const TitopBlockSpec *b)
{
    return b->kind == TITOP_CLOSURE ? 72 : D_PC + 3 * b->n_children +
                                           (b->modes >= 0 ? flexible_size(b->modes, b->n_children) : 0);
}

TitopModel *titop_model_new(const TitopModelSpec *s, const double *par, char *err, size_t n_err,
                            void (*warn)(void *, const char *), void *env)
{
    Err e = {err, n_err, NULL};
    int nb = s->n_blocks, n_children = 0, n_par = 0, n_ptr = 0, offset[nb > 0 ? nb : 1];
    for (int k = 0; k < nb; k++) {
        const TitopBlockSpec *b = s->blocks + k;
        n_children += b->n_children;
        offset[k] = n_par;
        n_par += n_data(b);
        n_ptr += b->n_children + 4;
    }
    const TitopLoop *L = s->loop;
    int n_internal = L ? L->n_internal : 0, n_v = L ? L->n_values : 0, n_d = L ? L->n_d : 0, n_z = 0;
    int n_io = 0;                                   /* the largest control block's inputs or outputs */
    for (int k = 0; L && k < L->n_controls; k++)
        n_io = L->controls[k].n_u > n_io ? L->controls[k].n_u : L->controls[k].n_y > n_io ? L->controls[k].n_y : n_io;
    n_z = titop_model_n_discrete(s);
    TitopModel *m = calloc(1, sizeof *m);
    if (!m || !(m->ints = calloc(NI * nb + 2 * n_children + 1, sizeof(int))) ||
        !(m->par = calloc(n_par + 1, sizeof(double))) || !(m->ptr = calloc(n_ptr + 1, sizeof(double *))) ||
        !(m->u = calloc(s->n_inputs + n_internal + 1, sizeof(double))) ||
        !(m->K = calloc(7 * s->n_states + 1, sizeof(double))) || !(m->xi = calloc(s->n_states + 1, sizeof(double))) ||
        !(m->out = calloc(s->n_kernel_outputs + 1, sizeof(double))) ||
        !(m->PX = calloc(3 * s->n_outputs + 1, sizeof(double))) || !(m->motion = calloc(nb + 1, sizeof(int))) ||
        !(m->V = calloc(n_v + 1, sizeof(double))) || !(m->d = calloc(n_d + 1, sizeof(double))) ||
        !(m->cu = calloc(n_io + 1, sizeof(double))) || !(m->cy = calloc(n_io + 1, sizeof(double))) ||
        !(m->xs = calloc(s->n_states + 1, sizeof(double))) || !(m->zs = calloc(n_z + 1, sizeof(double))) ||
        !(m->PR = calloc(3 * (L ? L->n_reads : 0) + 1, sizeof(double)))) {
        titop_model_free(m);
        snprintf(err, n_err, "out of memory");
        return NULL;
    }
    if (n_internal)
        memcpy(m->u + s->n_inputs, L->internal, n_internal * sizeof(double));
    m->spec = s;
    m->n_par = n_par;
    for (int k = 0; k < nb; k++) {                  /* the blocks' data, in the order of the checks */
        const TitopBlockSpec *b = s->blocks + s->check_order[k];
        e.unit = b->unit;
        if (block_data(b, par, m->par + offset[s->check_order[k]], &e, warn, env)) {
            titop_model_free(m);
            return NULL;
        }
    }
    e.unit = NULL;
    int *child = m->ints + NI * nb, np = 0;
#define POINTER(pos) ((pos) < 0 ? -1 : (m->ptr[np] = m->u + (pos), np++))
    for (int k = 0; k < nb; k++) {
        const TitopBlockSpec *b = s->blocks + k;
        int *B = m->ints + NI * k;
        B[I_CHILD] = (int)(child - m->ints);
        for (int i = 0; i < b->n_children; i++, child += 2) {
            child[0] = b->child[i] >= 0 ? b->child[i] : -1;
            child[1] = b->child[i] >= 0 ? -1 : POINTER(-1 - b->child[i]);
        }
        B[I_TYPE] = b->kind;
        B[I_PARENT] = b->parent;
        B[I_SLOT] = b->slot;
        B[I_STATE] = b->state;
        B[I_NC] = b->n_children;
        B[I_DPAR] = offset[k];
        B[I_INERTIAL] = b->kind == TITOP_BASE && par[b->par[TITOP_P_EXT_FRAME]] == 0;
        B[I_MCONST] = POINTER(b->m_in);
        B[I_EXT] = POINTER(b->ext_in);
        B[I_TAU] = POINTER(b->tau_in);
        B[I_INVERSE] = b->inverse;
        B[I_PARENT_R] = b->parent_r;
        B[I_SLOT_R] = b->slot_r;
        B[I_MCONST_R] = POINTER(b->m_in_r);
        B[I_FLEX] = b->modes >= 0;
        B[I_MODES] = b->modes >= 0 ? b->modes : 0;
    }
#undef POINTER
    m->n_ptr = np;
    if ((s->rtol >= 0 && positive(&e, "rtol", par[s->rtol])) || (s->atol >= 0 && positive(&e, "atol", par[s->atol]))) {
        titop_model_free(m);
        return NULL;
    }
    if (!(m->ws = calloc(titop_workspace(nb, m->ints) + 1, sizeof(double)))) {
        titop_model_free(m);
        snprintf(err, n_err, "out of memory");
        return NULL;
    }
    for (int k = 0; k < nb; k++)                             /* WS.m of each block */
        m->motion[k] = (int)(titop_motion(k, m->ints, m->ws) - m->ws);
    for (int i = 0; i < s->n_outputs; i++)
        if (s->outputs[i].quantity != TITOP_KERNEL_OUTPUT && s->outputs[i].quantity != TITOP_VALUE &&
            s->outputs[i].point >= 0)
            memcpy(m->PX + 3 * i, par + s->outputs[i].point, 3 * sizeof(double));
    for (int i = 0; L && i < L->n_reads; i++)
        if (L->reads[i].quantity != TITOP_KERNEL_OUTPUT && L->reads[i].point >= 0)
            memcpy(m->PR + 3 * i, par + L->reads[i].point, 3 * sizeof(double));
    return m;
}

void titop_model_free(TitopModel *m)
{
    if (!m)
        return;
    free(m->ints);
    free(m->par);
    free((void *)m->ptr);
    free(m->u);
    free(m->ws);
    free(m->K);
    free(m->xi);
    free(m->out);
    free(m->PX);
    free(m->motion);
    free(m->dual);
    free(m->V);
    free(m->d);
    free(m->cu);
    free(m->cy);
    free(m->xs);
    free(m->zs);
    free(m->PR);
    free(m);
}

int titop_model_n_discrete(const TitopModelSpec *s)
{
    return s->loop ? 3 + s->loop->n_d : 0;
}

const char *titop_model_discrete_invalid(const TitopModelSpec *s, const double *z)
{
    if (!s->loop)
        return NULL;
    if (!isfinite(z[0]) || isnan(z[1]) || z[1] == -INFINITY)  /* the end of the piece: INFINITY when not known */
        return "the last event met or the end of its piece is not a time";
    if (z[2] != 0.0 && z[2] != 1.0)
        return "the flag of the start's samples is neither 0 nor 1";
    for (int i = 0; i < s->loop->n_d; i++)
        if (!isfinite(z[3 + i]))
            return "a discrete state is not finite";
    return NULL;
}

void titop_model_initial_state(const TitopModel *m, const double *par, double t0, double *x, double *z)
{
    const TitopModelSpec *s = m->spec;
    const TitopLoop *L = s->loop;
    if (L) {                                                     /* ClosedLoop.initial_state, _discrete */
        if (L->n_x)                              /* tables of none are NULL, memcpy's may not be */
            memcpy(x + s->n_states - L->n_x, L->x0, L->n_x * sizeof(double));
        z[0] = t0;
        z[1] = INFINITY;
        z[2] = 1.0;
        if (L->n_d)
            memcpy(z + 3, L->d0, L->n_d * sizeof(double));
    }
    for (int k = 0; k < s->n_blocks; k++) {
        const TitopBlockSpec *b = s->blocks + k;
        double *xb = x + b->state;
        if (b->kind == TITOP_BASE || b->kind == TITOP_IMPOSED) {     /* _Base.initial_state */
            double P[9];
            memcpy(xb, par + b->par[TITOP_P_TWIST0], 6 * sizeof(double));
            memcpy(xb + 6, par + b->par[TITOP_P_R0], 3 * sizeof(double));
            dcm_from_euler(par + b->par[TITOP_P_THETA0], P);
            quat_from_dcm(P, xb + 9);
        } else if (b->kind == TITOP_REVOLUTE || b->kind == TITOP_PRISMATIC) {
            xb[0] = par[b->par[TITOP_P_Q0]];
            xb[1] = par[b->par[TITOP_P_QD0]];
        }
        if (b->modes > 0) {                                          /* FlexibleBody.initial_state */
            memcpy(xb + own_states(b->kind), par + b->flex[TITOP_F_ETA0], b->modes * sizeof(double));
            memcpy(xb + own_states(b->kind) + b->modes, par + b->flex[TITOP_F_ETAD0], b->modes * sizeof(double));
        }
    }
}

/* component k of an inertial quantity of a body from its motion vector m_P at P (body frame) and
 * a point [PX]_Rb (records.inertial: spatial.inertial_position, spatial.inertial_twist) */
static double inertial(int quantity, const double *m_P, const double *PX, int k)
{
    double P[9], r[3], v[3];
    dcm_from_euler(m_P + 15, P);                                   /* P_b/i */
    if (quantity == TITOP_POSITION) {                              /* [IX]_Ri = P_b/i ([IP] + [PX]) */
        for (int i = 0; i < 3; i++)
            r[i] = m_P[12 + i] + PX[i];
        return P[3 * k] * r[0] + P[3 * k + 1] * r[1] + P[3 * k + 2] * r[2];
    }
    if (quantity == TITOP_VELOCITY) {                              /* P_b/i [v_P + omega x PX; omega] */
        cross(m_P + 9, PX, v);
        for (int i = 0; i < 3; i++)
            r[i] = k < 3 ? m_P[6 + i] + v[i] : m_P[9 + i];
        k %= 3;
        return P[3 * k] * r[0] + P[3 * k + 1] * r[1] + P[3 * k + 2] * r[2];
    }
    return quantity == TITOP_DCM ? P[k] : m_P[15 + k];
}

/* one of the tree's values after titop_evaluate: a kernel output, an inertial quantity at PX */
static double tree_value(const TitopModel *m, const TitopOutput *o, const double *PX)
{
    if (o->quantity == TITOP_KERNEL_OUTPUT)
        return m->out[o->source];
    return inertial(o->quantity, o->node ? m->out + o->node - 1 : m->ws + m->motion[o->block], PX, o->source);
}

static int loop_evaluate(TitopModel *m, double t, double a, double b, const double *x, const double *d, double *xdot);
static int loop_update(TitopModel *m, double t, const double *x, double *d);

int titop_model_outputs(TitopModel *m, double t, const double *x, const double *z, const double *u, double *y,
                        double *xdot)
{
    const TitopModelSpec *s = m->spec;
    const TitopLoop *L = s->loop;
    int code;
    memcpy(m->u, u, s->n_inputs * sizeof(double));
    if (L) {
        const double *d = z + 3;
        if (z[2] != 0.0) {                                       /* the samples of the start, not taken yet */
            memcpy(m->d, d, L->n_d * sizeof(double));
            if ((code = loop_update(m, t, x, m->d)))
                return code;
            d = m->d;
        }
        code = loop_evaluate(m, t, z[0], z[1], x, d, xdot);
    } else {
        code = titop_evaluate(s->n_blocks, m->ints, m->par, m->ptr, m->ws, x, xdot, y ? m->out : NULL);
    }
    for (int i = 0; y && i < s->n_outputs && !code; i++) {
        const TitopOutput *o = s->outputs + i;
        y[i] = o->quantity == TITOP_VALUE ? m->V[o->source] : tree_value(m, o, m->PX + 3 * i);
    }
    return code;
}

int titop_model_derivatives(TitopModel *m, const double *x, const double *u, size_t ns, const double *seeds,
                            double *d)
{
    const TitopModelSpec *s = m->spec;
    int nb = s->n_blocks, ni = s->n_inputs, nx = s->n_states, no = s->n_outputs, nk = s->n_kernel_outputs;
    int W = titop_dual_width(), D = 1 + W, n_ws = titop_dual_workspace(nb, m->ints);
    size_t n_dual = (size_t)D * (m->n_par + ni + n_ws + 2 * nx + nk)
                    + (m->n_ptr * sizeof(double *) + sizeof(double) - 1) / sizeof(double);
    if (!m->dual && !(m->dual = calloc(n_dual + 1, sizeof(double))))
        return -1;
    double *par = m->dual, *du = par + D * m->n_par, *ws = du + D * ni, *y = ws + D * n_ws, *ydot = y + D * nx;
    double *out = ydot + D * nx;
    const double **ptr = (const double **)(out + D * nk);
    for (int i = 0; i < m->n_par; i++)                                  /* the data: constants */
        par[D * i] = m->par[i];
    for (int i = 0; i < m->n_ptr; i++)                                  /* the inputs the kernel reads */
        ptr[i] = du + D * (m->ptr[i] - m->u);
    for (size_t j0 = 0; j0 < ns; j0 += W) {                            /* W seeds per evaluation */
        int w = ns - j0 < (size_t)W ? (int)(ns - j0) : W;
        for (int i = 0; i < ni + nx; i++) {
            double *v = i < ni ? du + D * i : y + D * (i - ni);
            v[0] = i < ni ? u[i] : x[i - ni];
            for (int k = 0; k < W; k++)
                v[1 + k] = k < w ? seeds[(j0 + k) * (ni + nx) + i] : 0.0;
        }
        int code = titop_dual_evaluate(nb, m->ints, par, ptr, ws, y, ydot, out);
        if (code)
            return code;
        for (int k = 0; k < w; k++) {
            double *dj = d + (j0 + k) * (no + nx);
            for (int r = 0; r < no; r++)                               /* the FMU's outputs: the kernel's */
                dj[r] = out[D * s->outputs[r].source + 1 + k];
            for (int r = 0; r < nx; r++)
                dj[no + r] = ydot[D * r + 1 + k];
        }
    }
    return 0;
}

/* the quaternions of the bases normalised (_Base.project_state) */
static void project(const TitopModelSpec *s, double *y)
{
    for (int k = 0; k < s->n_blocks; k++) {
        const TitopBlockSpec *b = s->blocks + k;
        if (b->kind == TITOP_BASE || b->kind == TITOP_IMPOSED) {
            double *q = y + b->state + 9, norm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            for (int i = 0; i < 4; i++)
                q[i] /= norm;
        }
    }
}

static int loop_step(TitopModel *m, double t, double *x, double *z, double h, double rtol, double atol,
                     double *h_guess);

int titop_model_step(TitopModel *m, double t, double *x, double *z, const double *u, double h, double rtol,
                     double atol, double *h_guess)
{
    const TitopModelSpec *s = m->spec;
    int n = s->n_states;
    memcpy(m->u, u, s->n_inputs * sizeof(double));
    if (s->loop)
        return loop_step(m, t, x, z, h, rtol, atol, h_guess);
    if (n == 0)
        return 0;
    double y[n];
    memcpy(y, x, n * sizeof(double));
    double hg = *h_guess;
    int code = titop_step(s->n_blocks, m->ints, m->par, m->ptr, m->ws, n, y, h, rtol, atol, &hg,
                          s->max_steps, s->tableau_a, s->tableau_e, m->K, m->xi);
    if (code)
        return code;
    project(s, y);
    memcpy(x, y, n * sizeof(double));
    *h_guess = hg;
    return 0;
}

/* --- Closed loops --------------------------------------------------------------------------
 * As titop_fmu/titop/closedloop.py's ClosedLoop, step for step: at a time t, the signals'
 * values (inside the open piece (a, b) between the events around t), the constants, the tree's
 * values the blocks read (its outputs that depend on its states alone), the blocks' outputs in
 * the order of their direct feedthrough with the tree's stage among them (its fed inputs set,
 * its derivatives and outputs, read again if a block reads an acceleration), the blocks' state
 * derivatives. At an event the discrete blocks sample, in that order, each seeing the updates
 * before it. A communication step is split at the events inside it (titop_fmu/titop/
 * assembly_unit.py: ClosedLoopUnit, the same). */

/* t brought into the open interval (a, b) (signals.py: within) */
static double within(double t, double a, double b)
{
    if (t <= a)
        return nextafter(a, INFINITY);
    if (t >= b)
        return nextafter(b, -INFINITY);
    return t;
}

static void read_tree(TitopModel *m, double *V)
{
    const TitopLoop *L = m->spec->loop;
    for (int i = 0; i < L->n_reads; i++)
        V[L->read_slots[i]] = tree_value(m, L->reads + i, m->PR + 3 * i);
}

/* the tree's stage: its inputs fed from V, its state derivatives (xdot, or NULL) and outputs */
static int tree_stage(TitopModel *m, const double *x, double *V, double *xdot)
{
    const TitopModelSpec *s = m->spec;
    const TitopLoop *L = s->loop;
    for (int i = 0; i < L->n_feeds; i++)
        m->u[L->feeds[2 * i]] = V[L->feeds[2 * i + 1]];
    int code = titop_evaluate(s->n_blocks, m->ints, m->par, m->ptr, m->ws, x, xdot, m->out);
    if (!code && L->reads_accelerations)
        read_tree(m, V);
    return code;
}

static const double *inputs_of(TitopModel *m, const TitopControl *c)
{
    for (int i = 0; i < c->n_u; i++)
        m->cu[i] = m->V[c->u[i]];
    return m->cu;
}

/* ClosedLoop.evaluate: m->V at t in the piece (a, b), the states x and discrete states d, and the
 * state derivatives xdot (NULL: not wanted); 0 or a kernel code */
static int loop_evaluate(TitopModel *m, double t, double a, double b, const double *x, const double *d, double *xdot)
{
    const TitopLoop *L = m->spec->loop;
    double *V = m->V, ts = within(t, a, b);
    int code, staged = 0;
    for (int i = 0; i < L->n_signals; i++)
        V[L->signals[i].slot] = L->signals[i].value(ts);
    for (int i = 0; i < L->n_constants; i++)
        V[L->constants[2 * i]] = m->u[L->constants[2 * i + 1]];
    if (L->n_reads && (L->n_controls || !xdot)) {
        if ((code = titop_evaluate(m->spec->n_blocks, m->ints, m->par, m->ptr, m->ws, x, NULL, m->out)))
            return code;
        read_tree(m, V);
    }
    for (int k = 0; k < L->n_order; k++) {
        if (L->order[k] < 0) {
            if ((code = tree_stage(m, x, V, xdot)))
                return code;
            staged = 1;
            continue;
        }
        const TitopControl *c = L->controls + L->order[k];
        titop_control_output(c, x + c->x, d + c->d, inputs_of(m, c), m->cy);
        for (int i = 0; i < c->n_y; i++)
            V[c->y[i]] = m->cy[i];
    }
    if (!staged && (code = tree_stage(m, x, V, xdot)))
        return code;
    for (int k = 0; xdot && k < L->n_controls; k++) {
        const TitopControl *c = L->controls + k;
        if (c->n_x)
            titop_control_derivative(c, x + c->x, d + c->d, inputs_of(m, c), xdot + c->x);
    }
    return 0;
}

/* the sample index of a discrete block at t, or -1 if t is none of its instants (exactly, as
 * next_sample computes them: closedloop.py's _is_sample) */
static long long sample_index(const TitopControl *c, double t)
{
    double k = nearbyint((t - c->offset) / c->sample_time);
    return k >= 0 && c->offset + k * c->sample_time == t ? (long long)k : -1;
}

/* ClosedLoop.update: the discrete states d (in place) after the samples at t, the blocks sampled
 * in feedthrough order at the signals' right limits; 0 or a kernel code */
static int loop_update(TitopModel *m, double t, const double *x, double *d)
{
    const TitopLoop *L = m->spec->loop;
    long long k[L->n_controls > 0 ? L->n_controls : 1];
    int due = 0, code;
    for (int i = 0; i < L->n_controls; i++) {
        k[i] = L->controls[i].sample_time > 0 ? sample_index(L->controls + i, t) : -1;
        due |= k[i] >= 0;
    }
    if (!due)
        return 0;
    if ((code = loop_evaluate(m, t, t, INFINITY, x, d, NULL)))
        return code;
    for (int j = 0; j < L->n_order; j++) {
        int i = L->order[j];
        if (i < 0 || k[i] < 0)
            continue;
        const TitopControl *c = L->controls + i;
        titop_control_update(c, k[i], x + c->x, d + c->d, inputs_of(m, c));
        if ((code = loop_evaluate(m, t, t, INFINITY, x, d, NULL)))
            return code;
    }
    return 0;
}

/* the first sample instant of a discrete block after t (ControlBlock.samples) */
static double next_sample(const TitopControl *c, double t)
{
    double k = fmax(0.0, ceil((t - c->offset) / c->sample_time - 1e-9)), b = c->offset + k * c->sample_time;
    return b > t ? b : c->offset + (k + 1) * c->sample_time;
}

/* the first event in (t, t1]: a signal's breakpoint (those found by sampling looked for in
 * (t, t + window] only, whose end is then an event too), a sample instant; INFINITY if none */
static double next_event(const TitopModel *m, double t, double t1, double window)
{
    const TitopLoop *L = m->spec->loop;
    double e = INFINITY;
    for (int i = 0; i < L->n_signals; i++) {
        const TitopSignal *sg = L->signals + i;
        e = fmin(e, sg->next(t, sg->scanned ? fmin(t1, t + window) : t1));
        if (sg->scanned && t + window <= t1)
            e = fmin(e, t + window);
    }
    for (int i = 0; i < L->n_controls; i++)
        if (L->controls[i].sample_time > 0) {
            double b = next_sample(L->controls + i, t);
            e = b <= t1 ? fmin(e, b) : e;
        }
    return e;
}

/* the loop's right-hand side on a piece, for titop_dopri5 */
typedef struct {
    TitopModel *m;
    double a, b;
    const double *d;
} Piece;

static int piece_derivatives(void *ctx, double t, const double *x, double *xdot)
{
    const Piece *p = (const Piece *)ctx;
    return loop_evaluate(p->m, t, p->a, p->b, x, p->d, xdot);
}

/* a communication step from t by h (ClosedLoopUnit._do_step): from event to event, the samples
 * taken at each; on copies of x and z, replaced at the end */
static int loop_step(TitopModel *m, double t, double *x, double *z, double h, double rtol, double atol,
                     double *h_guess)
{
    const TitopModelSpec *s = m->spec;
    const TitopLoop *L = s->loop;
    int n = s->n_states, n_z = titop_model_n_discrete(s), code;
    double *xs = m->xs, *zs = m->zs, *d = zs + 3, hg = *h_guess;
    memcpy(xs, x, n * sizeof(double));
    memcpy(zs, z, n_z * sizeof(double));
    if (zs[2] != 0.0) {                                          /* the samples of the start */
        if ((code = loop_update(m, t, xs, d)))
            return code;
        zs[2] = 0.0;
    }
    double end = t + h, near = L->near * fmax(1.0, fabs(end)), now = t;
    for (;;) {             /* the next event after the last one met (none before now - near is left) */
        double e = next_event(m, fmax(zs[0], now - near), end + near, INFINITY);
        double stop = e >= end - near ? end : e;                /* an event near the end is met there */
        if (stop > now && n) {
            Piece piece = {m, zs[0], e, d};
            if ((code = titop_dopri5(n, xs, now, stop - now, rtol, atol, &hg, s->max_steps, s->tableau_a,
                                     s->tableau_e, s->tableau_c, m->K, m->xi, piece_derivatives, &piece)))
                return code;
            project(s, xs);
        }
        now = stop;
        if (!isfinite(e))
            break;
        if ((code = loop_update(m, e, xs, d)))
            return code;
        zs[0] = e;
    }
    memcpy(x, xs, n * sizeof(double));
    memcpy(z, zs, n_z * sizeof(double));
    *h_guess = hg;
    return 0;
}

int titop_model_event(TitopModel *m, double t, const double *x, double *z, const double *u)
{
    const TitopModelSpec *s = m->spec;
    const TitopLoop *L = s->loop;
    int n_z = titop_model_n_discrete(s), code;
    if (!L)
        return 0;
    double *zs = m->zs, *d = zs + 3;
    memcpy(m->u, u, s->n_inputs * sizeof(double));
    memcpy(zs, z, n_z * sizeof(double));
    if (zs[2] != 0.0) {                                          /* the samples of the start */
        if ((code = loop_update(m, t, x, d)))
            return code;
        zs[2] = 0.0;
    }
    for (double e; isfinite(e = next_event(m, zs[0], t + L->near * fmax(1.0, fabs(t)), INFINITY));) {
        if ((code = loop_update(m, e, x, d)))                    /* the events met now */
            return code;
        zs[0] = e;
    }
    zs[0] = fmax(zs[0], t);                                      /* an event met: the piece begins */
    zs[1] = next_event(m, zs[0], INFINITY, L->window);
    memcpy(z, zs, n_z * sizeof(double));
    return 0;
}

double titop_model_next_event(const TitopModel *m, const double *z)
{
    return m->spec->loop ? z[1] : INFINITY;
}
