/* The co-simulation master's inner arithmetic in C (cosim/clib.py builds and loads it): the
 * loop solve's evaluation plans over FMUs (plan.py) and the attitude charts (charts.py). Each
 * does what the Python beside it does, operation for operation: the same results, bit for bit.
 *
 * 1. A plan of the loop solve (titop_fmu.cosim.loop.LoopSolver), where every unit of it is an
 * FMU: per unit call, in order, its inputs gathered from the outputs Y and the loop unknowns z
 * (and kept in Ucur, the value each coupling input is set to), fmi2SetReal, fmi2GetReal, its
 * outputs scattered into Y: what LoopSolver._run does, a call of the FMUs' own functions each.
 *
 * op (OP ints per unit call): the unit, the number of inputs from Y then from z, of outputs,
 * and the offsets of its tables: the inputs' value references (vr) and sources in Y (idx), their
 * positions in z and in Ucur (idx), the outputs' value references (vr) and positions in Y (idx).
 * The time each unit spends in its FMI calls is added to seconds[unit]. Returns 0, or the
 * failing call: 2 * op + (0 fmi2SetReal, 1 fmi2GetReal) + 1, its status in *status. */

#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "spatial.h"

typedef int (*fmi2_rw)(void *component, const unsigned int *vr, size_t n, double *values);

enum { O_UNIT, O_NY, O_NZ, O_NOUT, O_VR_IN, O_SRC, O_ZPOS, O_CIN, O_VR_OUT, O_POS, OP };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int titop_plan_run(int n_ops, const int *op, void *const *component, void *const *set_real,
                   void *const *get_real, const unsigned int *vr, const int *idx, const double *z, double *Y,
                   double *Ucur, double *buf, double *seconds, int *status)
{
    for (int k = 0; k < n_ops; k++) {
        const int *o = op + OP * k;
        int u = o[O_UNIT], ny = o[O_NY], n_in = ny + o[O_NZ], n_out = o[O_NOUT];
        const int *src = idx + o[O_SRC], *zpos = idx + o[O_ZPOS], *cin = idx + o[O_CIN], *pos = idx + o[O_POS];
        for (int i = 0; i < ny; i++)
            buf[i] = Y[src[i]];
        for (int i = ny; i < n_in; i++)
            buf[i] = z[zpos[i - ny]];
        for (int i = 0; i < n_in; i++)
            Ucur[cin[i]] = buf[i];
        double t = now();
        if (n_in) {
            *status = ((fmi2_rw)set_real[u])(component[u], vr + o[O_VR_IN], (size_t)n_in, buf);
            if (*status > 1) {
                seconds[u] += now() - t;
                return 2 * k + 1;
            }
        }
        if (n_out) {
            *status = ((fmi2_rw)get_real[u])(component[u], vr + o[O_VR_OUT], (size_t)n_out, buf);
            if (*status > 1) {
                seconds[u] += now() - t;
                return 2 * k + 2;
            }
            for (int j = 0; j < n_out; j++)
                Y[pos[j]] = buf[j];
        }
        seconds[u] += now() - t;
    }
    *status = 0;
    return 0;
}

/* 2. The attitude charts (titop_fmu.cosim.charts.Chart): differences and steps of vectors
 * holding plain angles (wrapped to [-pi, pi)) and 3-2-1 Euler triples (on the rotation group,
 * in local rotation-vector coordinates), as charts.py and spatial.py (quats_from_euler,
 * quat_rotation_vectors, rotated_eulers) do them. ang: the na plain-angle positions; tri: the
 * m triples' positions. */

static double wrap_angle(double a)                  /* numerics.wrap: (a + pi) % (2 pi) - pi */
{
    const double pi = 3.14159265358979323846, b = 2.0 * pi;
    double r = fmod(a + pi, b);                     /* numpy's remainder: the divisor's sign */
    if (r != 0.0) {
        if (r < 0.0)
            r += b;
    } else {
        r = 0.0;
    }
    return r - pi;
}

static void quat_from_euler(const double *e, double *q)      /* q_z(psi) q_y(theta) q_x(phi) */
{
    double cf = cos(0.5 * e[0]), sf = sin(0.5 * e[0]), ct = cos(0.5 * e[1]), st = sin(0.5 * e[1]);
    double cp = cos(0.5 * e[2]), sp = sin(0.5 * e[2]);
    q[0] = cp * ct * cf + sp * st * sf; q[1] = cp * ct * sf - sp * st * cf;
    q[2] = cp * st * cf + sp * ct * sf; q[3] = sp * ct * cf - cp * st * sf;
}

/* the rotation vector of qb^* qa, the shorter way round */
static void quat_rotation_vector(const double *qa, const double *qb, double *out)
{
    double w2 = qa[0], x2 = qa[1], y2 = qa[2], z2 = qa[3], w1 = qb[0], x1 = qb[1], y1 = qb[2], z1 = qb[3];
    double w = w1 * w2 + x1 * x2 + y1 * y2 + z1 * z2, x = w1 * x2 - x1 * w2 - y1 * z2 + z1 * y2;
    double y = w1 * y2 + x1 * z2 - y1 * w2 - z1 * x2, z = w1 * z2 - x1 * y2 + y1 * x2 - z1 * w2;
    if (w < 0.0) {
        w = -w; x = -x; y = -y; z = -z;
    }
    double s = sqrt(x * x + y * y + z * z);         /* sin(angle / 2) */
    double k = s > 1e-300 ? 2.0 * atan2(s, w) / s : 2.0;
    out[0] = k * x; out[1] = k * y; out[2] = k * z;
}

/* Theta(P(Theta) e^{(*phi)}): the attitude e turned by phi in its own frame */
static void rotated_euler(const double *e, const double *phi, double *out)
{
    double a = phi[0], b = phi[1], c = phi[2], angle = sqrt(a * a + b * b + c * c), R[9], P[9], PR[9];
    if (angle < 1e-12) {                            /* 1 + (*phi) */
        double r[9] = {1.0, -c, b, c, 1.0, -a, -b, a, 1.0};
        memcpy(R, r, sizeof R);
    } else {                                        /* Rodrigues (spatial._axis_rotation) */
        double x = a / angle, y = b / angle, z = c / angle, co = cos(angle), s = sin(angle), v = 1.0 - co;
        double r[9] = {co + v * x * x, v * x * y - s * z, v * x * z + s * y,
                       v * x * y + s * z, co + v * y * y, v * y * z - s * x,
                       v * x * z - s * y, v * y * z + s * x, co + v * z * z};
        memcpy(R, r, sizeof R);
    }
    dcm_from_euler(e, P);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            PR[3 * i + j] = P[3 * i] * R[j] + P[3 * i + 1] * R[3 + j] + P[3 * i + 2] * R[6 + j];
    /* cos(theta) by sqrt, not hypot: Python's math.hypot and libm's round differently */
    euler_angles_given(PR, sqrt(PR[0] * PR[0] + PR[3] * PR[3]), out);
}

/* d = a (-) b */
void titop_chart_minus(int n, const double *a, const double *b, int na, const int *ang, int m, const int *tri,
                       double *d)
{
    for (int i = 0; i < n; i++)
        d[i] = a[i] - b[i];
    for (int j = 0; j < na; j++)
        d[ang[j]] = wrap_angle(d[ang[j]]);
    for (int t = 0; t < m; t++) {
        const int *p = tri + 3 * t;
        double ea[3] = {a[p[0]], a[p[1]], a[p[2]]}, eb[3] = {b[p[0]], b[p[1]], b[p[2]]}, qa[4], qb[4], r[3];
        quat_from_euler(ea, qa);
        quat_from_euler(eb, qb);
        quat_rotation_vector(qa, qb, r);
        for (int k = 0; k < 3; k++)
            d[p[k]] = r[k];
    }
}

/* out = b (+) d */
void titop_chart_plus(int n, const double *b, const double *d, int m, const int *tri, double *out)
{
    for (int i = 0; i < n; i++)
        out[i] = b[i] + d[i];
    for (int t = 0; t < m; t++) {
        const int *p = tri + 3 * t;
        double e[3] = {b[p[0]], b[p[1]], b[p[2]]}, phi[3] = {d[p[0]], d[p[1]], d[p[2]]}, r[3];
        rotated_euler(e, phi, r);
        for (int k = 0; k < 3; k++)
            out[p[k]] = r[k];
    }
}

/* out = sum_i w_i (v_i (-) ref), v_i the k rows of v (k x n), summed in order */
void titop_chart_offset(int n, int k, const double *w, const double *v, const double *ref, int na, const int *ang,
                        int m, const int *tri, double *out, double *work)
{
    double *d = work, *acc = work + n;             /* work: n + 3 m */
    for (int i = 0; i < n; i++)
        out[i] = 0.0;
    for (int t = 0; t < 3 * m; t++)
        acc[t] = 0.0;
    for (int r = 0; r < k; r++) {
        const double *vr = v + (long)n * r;
        titop_chart_minus(n, vr, ref, na, ang, 0, tri, d);
        for (int i = 0; i < n; i++)
            out[i] += w[r] * d[i];
        for (int t = 0; t < m; t++) {
            const int *p = tri + 3 * t;
            double ea[3] = {vr[p[0]], vr[p[1]], vr[p[2]]}, eb[3] = {ref[p[0]], ref[p[1]], ref[p[2]]};
            double qa[4], qb[4], x[3];
            quat_from_euler(ea, qa);
            quat_from_euler(eb, qb);
            quat_rotation_vector(qa, qb, x);
            for (int c = 0; c < 3; c++)
                acc[3 * t + c] = acc[3 * t + c] + w[r] * x[c];
        }
    }
    for (int t = 0; t < m; t++)
        for (int c = 0; c < 3; c++)
            out[tri[3 * t + c]] = acc[3 * t + c];
}

/* 3. A run's base steps (titop_fmu.cosim.run.Run.base_step, its loop solves, loop.LoopSolver.solve,
 * and its step Jacobian, step_jacobian.StepJacobian, dense), where every unit of the run is an FMU
 * and its coupling inputs are few enough for dense algebra: core.py sets up a titop_run over the
 * Python objects' own arrays, and the Python does what is rare (measuring the feedthrough M, the
 * step sensitivities P) through two callbacks. The same steps as the Python, in the same order;
 * the sums in another order (the results equal to rounding, not bit for bit). */

#include <stdlib.h>

typedef int (*fmi2_do_step)(void *component, double t, double h, int no_set_prior);
typedef int (*fmi2_state_out)(void *component, void **state);     /* fmi2GetFMUstate, fmi2FreeFMUstate */
typedef int (*fmi2_state_in)(void *component, void *state);       /* fmi2SetFMUstate */

typedef struct {                   /* a loop plan's tables, as titop_plan_run takes them */
    int n_ops;
    const int *op;
    void *const *component, *const *set_real, *const *get_real;
    const unsigned int *vr;
    const int *idx;
    double *z, *buf, *seconds;
    int *status;
    double *runs;                  /* runs so far */
} titop_plan;

/* a unit's columns of the feedthrough M among the loop unknowns, measured in C (loop_refresh): one
 * call of its vendor function titopGetDirectionalDerivatives for the n_in inputs (seeds the
 * identity), then M[dst[e]] = result[src[e]], or 0 where src[e] < 0 (no declared dependency) */
typedef struct {
    int unit;
    void *dd;
    int n_out, n_in, n_set;
    const unsigned int *out_vr, *in_vr;
    const double *seeds;
    double *result;
    const int *dst, *src;
} titop_refresh;

typedef int (*titop_dd)(void *component, const unsigned int *out_vr, size_t n_out, const unsigned int *in_vr,
                        size_t n_in, size_t k, const double *seeds, double *result);

typedef struct {
    int n_units, n_cin, n_out, n_u, degree;
    /* the units: components, FMI functions, coupling inputs (unit j's: cin_pos[cin_off[j]..cin_off[j+1]],
     * value references cin_vr), the states a base step starts from, time and calls per unit */
    void *const *component, *const *set_real, *const *do_step, *const *get_state, *const *set_state,
        *const *free_state;
    const int *cin_off, *cin_pos;
    const unsigned int *cin_vr;
    void **states;
    double *unit_seconds, *unit_counts;            /* counts: calls, doSteps per unit */
    titop_plan pre, full, loop;
    int na, m;                                     /* the coupling inputs' chart */
    const int *ang, *tri;
    /* the loop solve: unknowns, their sources in Y, which are angles; its arrays */
    const int *unknowns, *src;
    const unsigned char *u_angle;
    double *Y, *Ucur, *z, *zscale, *H, *M_max, *H_valid;
    double rtol, atol, refresh_cost;
    int max_iter;
    double *r, *err;                               /* the last residual and its weights (failures) */
    /* the step Jacobian: J, (I - J)^-1, both n_cin x n_cin by columns (Fortran order: the products
     * with them are sums of columns, SIMD-friendly), and jac = {h (0: none yet), inverse formed,
     * the step it is exact at (0: none)} */
    double *J, *Jinv, *jac;
    /* the run */
    const int *cin_src;
    double *U, *hist_t, *hist_U, *hist_n, *ubar;
    int (*loop_jacobian)(int measure);             /* H from M (measured again when measure) */
    int (*step_jacobian)(double t, double h);     /* P measured: J from it */
    double *counters;                              /* base steps, coupling iterations, loop solves, Newton iterations,
                                                    * M measured in C */
    double *fail;                                  /* what failed, see titop_run_steps */
    double *work;                                  /* scratch: 14 n_cin + 8 n_u + n_cin^2 (the WORK_ offsets) */
    const unsigned char *cin_unknown;              /* per coupling input: one of the loop's unknowns */
    /* M and H in C where every unit with unknowns' columns gives them exactly by its vendor function
     * (n_refresh of them; 0: the Python's loop_jacobian does): Mc the loop solver's M (n_cin x n_cin,
     * by rows), which the Python keeps equal to its own, M_fresh set when the C measured it */
    int n_refresh;
    const titop_refresh *refresh;
    double *Mc, *M_fresh;
} titop_run;

/* where each part of the run's scratch starts (n = n_cin, u = n_u): the base step's eight vectors,
 * the units' input buffer, the step Jacobian's update, the weights, the unknowns' iterate, Newton's
 * six vectors, its iterate, the matrix inverted */
#define WORK_BUF(R) ((R)->work + 8L * (R)->n_cin)
#define WORK_UPDATE(R) ((R)->work + 9L * (R)->n_cin)
#define WORK_W(R) ((R)->work + 13L * (R)->n_cin)
#define WORK_ZU(R) ((R)->work + 14L * (R)->n_cin)
#define WORK_NEWTON(R) (WORK_ZU(R) + (R)->n_u)
#define WORK_LOOP_Z(R) (WORK_NEWTON(R) + 6L * (R)->n_u)
#define WORK_MATRIX(R) (WORK_LOOP_Z(R) + (R)->n_u)

enum { RUN_OK, RUN_STALLED, RUN_LOOP, RUN_FMI, RUN_CALLBACK, RUN_SINGULAR };
enum { LOOP_NOT_FINITE = 1, LOOP_SINGULAR, LOOP_NUMERICALLY_SINGULAR, LOOP_NO_CONVERGENCE };
enum { F_SET_STATE, F_SET_REAL, F_DO_STEP, F_GET_STATE, F_FREE_STATE, F_DERIVATIVES };

#define NOISE 1e-12
#define MAX_ITERATIONS 10
#define SLOW 0.3                /* run.SLOW: an iteration this slow measures the step Jacobian again */
#define MAX_REFINE 8            /* refinements of a correction with an inexact inverse (StepJacobian) */
#define REFINED 1e-2            /* ... until the last changed it by this, relative */

static double dmax(double a, double b) { return a > b ? a : b; }

static int fmi_failed(titop_run *R, int unit, int what, int status)
{
    R->fail[0] = unit;
    R->fail[1] = what;
    R->fail[2] = status;
    return RUN_FMI;
}

static int plan_run(titop_run *R, titop_plan *p, const double *z)
{
    if (z)
        memcpy(p->z, z, sizeof(double) * (size_t)R->n_u);
    p->runs[0] += 1.0;
    int failed = titop_plan_run(p->n_ops, p->op, p->component, p->set_real, p->get_real, p->vr, p->idx, p->z, R->Y,
                                R->Ucur, p->buf, p->seconds, p->status);
    if (failed) {
        R->fail[0] = (double)(failed - 1) / 2;      /* the op (core.py finds its unit) */
        R->fail[1] = -1 - (failed - 1) % 2;         /* -1 fmi2SetReal, -2 fmi2GetReal */
        R->fail[2] = *p->status;
        R->fail[3] = (double)(p == &R->full ? 1 : p == &R->loop ? 2 : 0);
        return RUN_FMI;
    }
    return RUN_OK;
}

/* r = Y[src] - z on the unknowns, angles wrapped */
static int propagate(titop_run *R, const double *z, int full, double *r)
{
    int s = plan_run(R, full ? &R->full : &R->loop, z);
    if (s)
        return s;
    for (int i = 0; i < R->n_u; i++) {
        r[i] = R->Y[R->src[i]] - z[i];
        if (R->u_angle[i])
            r[i] = wrap_angle(r[i]);
    }
    return RUN_OK;
}

/* y = A x, A n x n row-major; four rows at a time (four independent sums, each in the order of j:
 * the same bits as one row at a time, without waiting on each addition) */
static void matvec(int n, const double *A, const double *x, double *y)
{
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const double *a0 = A + (long)i * n, *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        for (int j = 0; j < n; j++) {
            s0 += a0[j] * x[j];
            s1 += a1[j] * x[j];
            s2 += a2[j] * x[j];
            s3 += a3[j] * x[j];
        }
        y[i] = s0;
        y[i + 1] = s1;
        y[i + 2] = s2;
        y[i + 3] = s3;
    }
    for (; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j < n; j++)
            s += A[(long)i * n + j] * x[j];
        y[i] = s;
    }
}

/* y = x^T A, A n x n row-major: a sum of rows (vectorized at -O3), four rows at a time (y read
 * and written once per four), each y_j summed in the order of i within a four and across them */
static void vecmat(int n, const double *restrict x, const double *restrict A, double *restrict y)
{
    for (int j = 0; j < n; j++)
        y[j] = 0.0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const double x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
        const double *a0 = A + (long)i * n, *a1 = a0 + n, *a2 = a1 + n, *a3 = a2 + n;
        for (int j = 0; j < n; j++)
            y[j] += ((x0 * a0[j] + x1 * a1[j]) + x2 * a2[j]) + x3 * a3[j];
    }
    for (; i < n; i++) {
        const double xi = x[i], *a = A + (long)i * n;
        for (int j = 0; j < n; j++)
            y[j] += xi * a[j];
    }
}

static int loop_fail(titop_run *R, const double *r, const double *err, int it, int why)
{
    memcpy(R->r, r, sizeof(double) * (size_t)R->n_u);
    memcpy(R->err, err, sizeof(double) * (size_t)R->n_u);
    R->fail[0] = why;
    R->fail[1] = it;
    return RUN_LOOP;
}

/* H = -[(I - M)^-1]_uu, M = Mc (loop.Sensitivities.form_H): an LU of I - M with partial pivoting,
 * solved for the unknowns' columns; 0 where I - M is singular (a zero pivot, as LAPACK's) */
static int form_H(titop_run *R)
{
    int n = R->n_cin, nu = R->n_u;
    double *A = WORK_MATRIX(R), *x = WORK_UPDATE(R), *piv = x + n;
    for (long i = 0; i < (long)n * n; i++)
        A[i] = -R->Mc[i];
    for (int i = 0; i < n; i++)
        A[(long)i * n + i] += 1.0;
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(A[(long)i * n + c]) > fabs(A[(long)p * n + c]))
                p = i;
        piv[c] = p;
        if (A[(long)p * n + c] == 0.0)
            return 0;
        if (p != c)
            for (int j = 0; j < n; j++) {
                double t = A[(long)c * n + j]; A[(long)c * n + j] = A[(long)p * n + j]; A[(long)p * n + j] = t;
            }
        const double *a = A + (long)c * n;
        for (int i = c + 1; i < n; i++) {
            double *b = A + (long)i * n, l = b[c] / a[c];
            b[c] = l;
            if (l != 0.0)                       /* M is block-sparse: most rows have nothing to eliminate */
                for (int j = c + 1; j < n; j++)
                    b[j] -= l * a[j];
        }
    }
    for (int k = 0; k < nu; k++) {
        for (int i = 0; i < n; i++)
            x[i] = 0.0;
        x[R->unknowns[k]] = 1.0;
        for (int c = 0; c < n; c++) {
            int p = (int)piv[c];
            double t = x[c]; x[c] = x[p]; x[p] = t;
        }
        /* the substitutions by columns, skipping the zeros of x (a unit vector, filled in by the
         * couplings only): dot products would be chains of dependent additions */
        for (int j = 0; j < n; j++)
            if (x[j] != 0.0)
                for (int i = j + 1; i < n; i++)
                    x[i] -= A[(long)i * n + j] * x[j];
        for (int j = n - 1; j >= 0; j--) {
            x[j] /= A[(long)j * n + j];
            if (x[j] != 0.0)
                for (int i = 0; i < j; i++)
                    x[i] -= A[(long)i * n + j] * x[j];
        }
        for (int i = 0; i < nu; i++)
            R->H[(long)i * nu + k] = -x[R->unknowns[i]];
    }
    return 1;
}

/* M's columns of the unknowns measured again (loop.LoopSolver.refresh_M: each unit's exact
 * derivatives, one vendor call per unit) and H formed from it (H_valid 0 if I - M is singular) */
static int loop_refresh(titop_run *R)
{
    long nn = (long)R->n_cin * R->n_cin;
    double *M = R->Mc;
    for (int q = 0; q < R->n_refresh; q++) {
        const titop_refresh *f = R->refresh + q;
        int j = f->unit;
        if (f->n_in) {
            double t0 = now();
            int s = ((titop_dd)f->dd)(R->component[j], f->out_vr, (size_t)f->n_out, f->in_vr, (size_t)f->n_in,
                                      (size_t)f->n_in, f->seeds, f->result);
            R->unit_seconds[j] += now() - t0;
            R->unit_counts[2 * j] += 1.0;
            if (s > 1)
                return fmi_failed(R, j, F_DERIVATIVES, s);
        }
        for (int e = 0; e < f->n_set; e++)
            M[f->dst[e]] = f->src[e] >= 0 ? f->result[f->src[e]] : 0.0;
    }
    double largest = 0.0;                   /* NaN if any is (numpy's max) */
    for (long i = 0; i < nn; i++)
        largest = isnan(M[i]) || isnan(largest) ? NAN : dmax(largest, fabs(M[i]));
    R->M_max[0] = largest;
    R->M_fresh[0] = 1.0;
    R->counters[4] += 1.0;
    R->H_valid[0] = form_H(R);
    return RUN_OK;
}

/* H from M, M measured again first when measure: in C where the units allow it (n_refresh) and
 * there is an M (the first, every column of it, is the Python's), else by the Python */
static int loop_jacobian(titop_run *R, int measure)
{
    if (!R->n_refresh || R->H_valid[0] < 0.0)
        return R->loop_jacobian(measure) ? RUN_CALLBACK : RUN_OK;
    if (measure)
        return loop_refresh(R);
    R->H_valid[0] = form_H(R);
    return RUN_OK;
}

/* loop_jacobian for the tests: what the base steps do when they measure M (measure) or form H */
int titop_run_loop_jacobian(titop_run *R, int measure)
{
    return loop_jacobian(R, measure);
}

/* Newton on the unknowns from z (overwritten), converged when |r_i| <= atol + rtol zscale_i or
 * |r_i| w_u_i <= tol (loop.LoopSolver._newton) */
static int loop_newton(titop_run *R, double *z, double tol, const double *w)
{
    int n = R->n_u, fresh = 0, s;
    double *r = WORK_NEWTON(R), *rn = r + n, *dz = rn + n, *err = dz + n, *Hy = err + n, *sH = Hy + n;
    double prev = -1.0, e = 0.0;
    if ((s = propagate(R, z, 1, r)))
        return s;
    for (int it = 0; it <= R->max_iter; it++) {
        e = 0.0;
        int finite = 1;
        double rmax = 0.0;
        for (int i = 0; i < n; i++) {
            if (fabs(z[i]) > R->zscale[i])
                R->zscale[i] = fabs(z[i]);
            double a = fabs(r[i]);
            err[i] = a / (R->atol + R->rtol * R->zscale[i]);
            double e2 = a * w[R->unknowns[i]] / tol;
            if (e2 < err[i])
                err[i] = e2;
            if (!isfinite(err[i]))
                finite = 0;
            if (err[i] > e)
                e = err[i];
            if (a > rmax)
                rmax = a;
        }
        if (!finite)
            return loop_fail(R, r, err, it, LOOP_NOT_FINITE);
        if (e <= 1.0) {
            memcpy(R->z, z, sizeof(double) * (size_t)n);
            return RUN_OK;
        }
        if (it == R->max_iter)
            break;
        int refresh = R->H_valid[0] < 0.0;                 /* no M yet */
        if (!refresh && !fresh && prev >= 0.0) {           /* loop.LoopSolver._worth_refreshing */
            double rate = e / prev;
            double left = rate >= 1.0 ? INFINITY : log(e) / -log(rate);
            double lim = R->max_iter - it - 1;
            refresh = left > (R->refresh_cost < lim ? R->refresh_cost : lim);
        }
        if (refresh) {
            if ((s = loop_jacobian(R, 1)))
                return s;
            fresh = 1;
        } else if (fresh && prev >= 0.0 && e > 0.5 * prev && it > 6) {
            break;                                          /* a fresh Jacobian and no progress */
        }
        if (R->H_valid[0] == 0.0 && (s = loop_jacobian(R, 0)))
            return s;
        if (R->H_valid[0] == 0.0)
            return loop_fail(R, r, err, it, LOOP_SINGULAR);
        for (int i = 0; i < n; i++)
            rn[i] = -r[i];
        matvec(n, R->H, rn, dz);
        double largest = 0.0;
        for (int i = 0; i < n; i++)
            largest = isfinite(dz[i]) && isfinite(largest) ? dmax(largest, fabs(dz[i])) : NAN;
        if (!isfinite(largest) || largest * 1e-8 * dmax(1.0, R->M_max[0]) >= rmax)
            return loop_fail(R, r, err, it, LOOP_NUMERICALLY_SINGULAR);
        prev = e;
        for (int i = 0; i < n; i++)
            z[i] += dz[i];
        if ((s = propagate(R, z, 0, rn)))
            return s;
        /* Broyden on H (loop.Sensitivities.broyden): H += (dz - H dr) dz^T H / (dz^T H dr) */
        for (int i = 0; i < n; i++)
            r[i] = rn[i] - r[i];                            /* dr, then r becomes rn below */
        matvec(n, R->H, r, Hy);
        double den = 0.0, ndz = 0.0, nHy = 0.0;
        for (int i = 0; i < n; i++) {
            den += dz[i] * Hy[i];
            ndz += dz[i] * dz[i];
            nHy += Hy[i] * Hy[i];
        }
        if (isfinite(den) && fabs(den) > 1e-14 * (sqrt(ndz) * sqrt(nHy))) {
            vecmat(n, dz, R->H, sH);
            for (int j = 0; j < n; j++)
                sH[j] /= den;                               /* n divisions, not n^2 */
            for (int i = 0; i < n; i++) {
                double a = dz[i] - Hy[i];
                for (int j = 0; j < n; j++)
                    R->H[(long)i * n + j] += a * sH[j];
            }
        }
        memcpy(r, rn, sizeof(double) * (size_t)n);
        R->counters[3] += 1.0;
    }
    return loop_fail(R, r, err, R->max_iter, LOOP_NO_CONVERGENCE);
}

/* the outputs at the current states; G = Y[cin_src] */
static int loop_solve(titop_run *R, const double *z0, double tol, const double *w, double *G)
{
    int s;
    R->counters[2] += 1.0;
    if (R->n_u) {
        double *z = WORK_LOOP_Z(R);
        memcpy(z, z0, sizeof(double) * (size_t)R->n_u);
        if ((s = loop_newton(R, z, tol, w)))
            return s;
    } else if ((s = plan_run(R, &R->pre, NULL))) {
        return s;
    }
    for (int k = 0; k < R->n_cin; k++)
        G[k] = R->Y[R->cin_src[k]];
    return RUN_OK;
}

/* -- the step Jacobian, dense (step_jacobian.StepJacobian) -- */

static void jac_at(titop_run *R, double h)
{
    int n = R->n_cin;
    if (fabs(h - R->jac[0]) > 1e-12 * R->jac[0]) {
        double c = h / R->jac[0];
        for (long i = 0; i < (long)n * n; i++)
            R->J[i] *= c;
        R->jac[0] = h;                                  /* the inverse stays, at its own step */
    }
}

static double jac_norm(titop_run *R, double h)
{
    int n = R->n_cin;
    jac_at(R, h);
    double best = 0.0, *s = WORK_UPDATE(R);     /* the sums by rows of the storage: contiguous */
    for (int i = 0; i < n; i++)
        s[i] = 0.0;
    for (int j = 0; j < n; j++) {
        const double *a = R->J + (long)j * n;
        for (int i = 0; i < n; i++)
            s[i] += fabs(a[i]);
    }
    for (int i = 0; i < n; i++)
        best = dmax(best, s[i]);
    return best;
}

/* Jinv = (I - J)^-1 by Gauss-Jordan with partial pivoting; 0 if singular. Both are stored by
 * columns: read by rows, the arrays are J^T and (I - J^T)^-1, which this inverts */
static int jac_invert(titop_run *R)
{
    int n = R->n_cin;
    double *A = WORK_MATRIX(R), *X = R->Jinv;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            A[(long)i * n + j] = (i == j) - R->J[(long)i * n + j];
            X[(long)i * n + j] = i == j;
        }
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(A[(long)i * n + c]) > fabs(A[(long)p * n + c]))
                p = i;
        if (A[(long)p * n + c] == 0.0 || !isfinite(A[(long)p * n + c]))
            return 0;
        if (p != c)
            for (int j = 0; j < n; j++) {
                double t = A[(long)c * n + j]; A[(long)c * n + j] = A[(long)p * n + j]; A[(long)p * n + j] = t;
                t = X[(long)c * n + j]; X[(long)c * n + j] = X[(long)p * n + j]; X[(long)p * n + j] = t;
            }
        double d = 1.0 / A[(long)c * n + c];
        for (int j = 0; j < n; j++) {
            A[(long)c * n + j] *= d;
            X[(long)c * n + j] *= d;
        }
        for (int i = 0; i < n; i++) {
            double f = A[(long)i * n + c];
            if (i == c || f == 0.0)
                continue;
            for (int j = 0; j < n; j++) {
                A[(long)i * n + j] -= f * A[(long)c * n + j];
                X[(long)i * n + j] -= f * X[(long)c * n + j];
            }
        }
    }
    R->jac[1] = 1.0;
    R->jac[2] = R->jac[0];
    return 1;
}

/* (I - J)^-1 r: with the inverse where it is exact (formed at this step, the updates since made
 * at it), else refined with it, an inverse at a nearby step, as the preconditioner; formed again
 * where that does not converge (step_jacobian.StepJacobian.correction) */
static int jac_correction(titop_run *R, double h, const double *r, double *corr)
{
    int n = R->n_cin;
    double *res = WORK_UPDATE(R), *d = res + n;
    jac_at(R, h);
    if (R->jac[1] == 0.0 && !jac_invert(R))
        return RUN_SINGULAR;
    vecmat(n, r, R->Jinv, corr);
    if (R->jac[2] == R->jac[0])
        return RUN_OK;
    for (int it = 0; it < MAX_REFINE; it++) {
        vecmat(n, corr, R->J, res);
        for (int i = 0; i < n; i++)
            res[i] += r[i] - corr[i];
        vecmat(n, res, R->Jinv, d);
        double dmax_ = 0.0, cmax = 0.0;
        for (int i = 0; i < n; i++) {
            corr[i] += d[i];
            dmax_ = dmax(dmax_, fabs(d[i]));
            cmax = dmax(cmax, fabs(corr[i]));
        }
        if (dmax_ <= REFINED * cmax)
            return RUN_OK;
    }
    if (!jac_invert(R))
        return RUN_SINGULAR;
    vecmat(n, r, R->Jinv, corr);
    return RUN_OK;
}

/* Broyden's update along dz (G changed by dG) in the inputs scaled by w, with Sherman-Morrison on
 * the inverse */
static void jac_update(titop_run *R, const double *dz, const double *dG, const double *w)
{
    int n = R->n_cin;
    double *u = WORK_UPDATE(R), *v = u + n, *Au = v + n, *vA = Au + n;
    double n2 = 0.0;
    for (int i = 0; i < n; i++) {
        double x = dz[i] * w[i];
        n2 += x * x;
        v[i] = x * w[i];
    }
    if (n2 <= 0.0)
        return;
    vecmat(n, dz, R->J, u);
    for (int i = 0; i < n; i++)
        u[i] = (dG[i] - u[i]) / n2;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            R->J[(long)j * n + i] += u[i] * v[j];
    if (R->jac[1] != 0.0) {
        vecmat(n, u, R->Jinv, Au);
        matvec(n, R->Jinv, v, vA);
        double den = 1.0;
        for (int i = 0; i < n; i++)
            den -= v[i] * Au[i];
        if (fabs(den) > 1e-8) {
            for (int j = 0; j < n; j++)
                for (int i = 0; i < n; i++)
                    R->Jinv[(long)j * n + i] += Au[i] * vA[j] / den;
            if (R->jac[2] != R->jac[0])
                R->jac[2] = 0.0;                        /* an update at another step: inexact at any */
        } else {
            R->jac[1] = 0.0;
        }
    }
}

/* -- the base step (run.Run.base_step) -- */

static double scaled_max(int n, const double *x, const double *w)
{
    double m = 0.0;
    for (int i = 0; i < n; i++)
        m = dmax(m, fabs(x[i]) * w[i]);
    return m;
}

static void predict(titop_run *R, double t, double *z, double *work)
{
    int n = R->n_cin, hn = (int)R->hist_n[0], k = hn < R->degree + 1 ? hn : R->degree + 1;
    const double *base = R->hist_U + (long)(hn - 1) * n;
    if (k == 1) {
        memcpy(z, base, sizeof(double) * (size_t)n);
        return;
    }
    double w[16];
    const double *nodes = R->hist_t + hn - k;
    for (int i = 0; i < k; i++) {                   /* numerics.lagrange_weights */
        double wi = 1.0;
        for (int j = 0; j < k; j++)
            if (j != i)
                wi *= (t - nodes[j]) / (nodes[i] - nodes[j]);
        w[i] = wi;
    }
    double *off = work, *scratch = work + n;
    titop_chart_offset(n, k, w, R->hist_U + (long)(hn - k) * n, base, R->na, R->ang, R->m, R->tri, off, scratch);
    titop_chart_plus(n, base, off, R->m, R->tri, z);
}

static int unit_step(titop_run *R, double t, double h, const double *ubar, int restore)
{
    double *buf = WORK_BUF(R);
    for (int j = 0; j < R->n_units; j++) {
        void *c = R->component[j];
        int s, a = R->cin_off[j], b = R->cin_off[j + 1];
        double t0 = now();
        if (restore) {
            if ((s = ((fmi2_state_in)R->set_state[j])(c, R->states[j])) > 1)
                return fmi_failed(R, j, F_SET_STATE, s);
            R->unit_counts[2 * j] += 1.0;
        }
        if (b > a) {
            for (int i = a; i < b; i++)
                buf[i - a] = ubar[R->cin_pos[i]];
            if ((s = ((fmi2_rw)R->set_real[j])(c, R->cin_vr + a, (size_t)(b - a), buf)) > 1)
                return fmi_failed(R, j, F_SET_REAL, s);
            R->unit_counts[2 * j] += 1.0;
        }
        if ((s = ((fmi2_do_step)R->do_step[j])(c, t, h, 0)) > 1)
            return fmi_failed(R, j, F_DO_STEP, s);
        R->unit_counts[2 * j] += 1.0;
        R->unit_counts[2 * j + 1] += 1.0;
        R->unit_seconds[j] += now() - t0;
    }
    return RUN_OK;
}

static int states_taken(titop_run *R)
{
    for (int j = 0; j < R->n_units; j++) {
        double t0 = now();
        R->states[j] = NULL;                        /* a new state (a state given would be updated in place) */
        int s = ((fmi2_state_out)R->get_state[j])(R->component[j], &R->states[j]);
        R->unit_seconds[j] += now() - t0;
        R->unit_counts[2 * j] += 1.0;
        if (s > 1)
            return fmi_failed(R, j, F_GET_STATE, s);
    }
    return RUN_OK;
}

static int states_freed(titop_run *R)
{
    int failed = RUN_OK;
    for (int j = 0; j < R->n_units; j++) {
        double t0 = now();
        int s = ((fmi2_state_out)R->free_state[j])(R->component[j], &R->states[j]);
        R->unit_seconds[j] += now() - t0;
        R->unit_counts[2 * j] += 1.0;
        if (s > 1 && !failed)
            failed = fmi_failed(R, j, F_FREE_STATE, s);
    }
    return failed;
}

static int base_step(titop_run *R, double t, double h, double tol, const double *scale, int own)
{
    int n = R->n_cin, s = RUN_OK;
    double *z = R->work, *zp = z + n, *G = zp + n, *Gp = G + n, *r = Gp + n, *corr = r + n, *dG = corr + n,
           *dz = dG + n, *w = WORK_W(R), *zu = WORK_ZU(R);
    R->fail[7] = t + h;                                       /* the time of the loop solves (failures) */
    if (own && (s = states_taken(R)))
        return s;
    const double *U0 = R->U;
    predict(R, t + h, z, corr);
    for (int i = 0; i < n; i++)
        w[i] = 1.0 / scale[i];
    double rho = R->jac[0] > 0.0 ? dmax(1e-3, jac_norm(R, h)) : 1.0;
    double loop_tol = 0.1 * tol / rho, e = 0.0, e_prev = -1.0;
    int refreshed = 0, have_prev = 0;
    for (int k = 0; k <= MAX_ITERATIONS; k++) {
        titop_chart_minus(n, z, U0, R->na, R->ang, R->m, R->tri, r);
        for (int i = 0; i < n; i++)
            r[i] *= 0.5;
        titop_chart_plus(n, U0, r, R->m, R->tri, R->ubar);
        if ((s = unit_step(R, t, h, R->ubar, k > 0)))
            goto done;
        for (int i = 0; i < R->n_u; i++)
            zu[i] = z[R->unknowns[i]];
        if ((s = loop_solve(R, zu, loop_tol, w, G)))
            goto done;
        R->counters[1] += 1.0;
        titop_chart_minus(n, G, z, R->na, R->ang, R->m, R->tri, r);
        if (!n)
            break;
        if (R->jac[0] <= 0.0) {
            if (R->step_jacobian(t, h)) {
                s = RUN_CALLBACK;
                goto done;
            }
        }
        double dGmax = 0.0;
        if (have_prev) {
            titop_chart_minus(n, G, Gp, R->na, R->ang, R->m, R->tri, dG);
            dGmax = scaled_max(n, dG, w);
            if (dGmax > 10 * loop_tol + 1e3 * NOISE) {       /* a secant pair above the noise */
                titop_chart_minus(n, z, zp, R->na, R->ang, R->m, R->tri, dz);
                jac_update(R, dz, dG, w);
            }
        }
        if ((s = jac_correction(R, h, r, corr)))
            goto done;
        e = 0.0;                      /* the predicted change, and at least the held inputs' own (run.py) */
        for (int i = 0; i < n; i++)   /* not on the loop unknowns: their residual is the loop solver's noise */
            e = dmax(e, dmax(fabs(corr[i] - r[i]), R->cin_unknown[i] ? 0.0 : 0.5 * fabs(r[i])) * w[i]);
        if (k) {                                              /* the last correction's effect against its prediction */
            double trust = dGmax / dmax(e_prev, 10 * loop_tol + 1e3 * NOISE);
            if (trust > 1.0)
                e *= trust;
        }
        if (e <= tol || (k >= 2 && e <= 100 * NOISE && e > 0.3 * e_prev))
            break;
        int slow = have_prev && e > SLOW * e_prev && e > 1e3 * NOISE;
        if (k == MAX_ITERATIONS || (slow && refreshed && e > 0.5 * e_prev)) {
            R->fail[0] = t;
            R->fail[1] = h;
            R->fail[2] = e;
            R->fail[3] = tol;
            R->fail[4] = k + 1;
            s = RUN_STALLED;
            goto done;
        }
        if (slow && !refreshed) {                             /* a fresh step Jacobian, once per base step */
            if (R->step_jacobian(t, h)) {
                s = RUN_CALLBACK;
                goto done;
            }
            if ((s = jac_correction(R, h, r, corr)))
                goto done;
            refreshed = 1;
        }
        e_prev = e;
        have_prev = 1;
        memcpy(zp, z, sizeof(double) * (size_t)n);
        memcpy(Gp, G, sizeof(double) * (size_t)n);
        titop_chart_plus(n, zp, corr, R->m, R->tri, z);
    }
    R->counters[0] += 1.0;
    memcpy(R->U, G, sizeof(double) * (size_t)n);
    {                                                         /* the predictor's history */
        int hn = (int)R->hist_n[0];
        if (hn == R->degree + 1) {
            memmove(R->hist_t, R->hist_t + 1, sizeof(double) * (size_t)(hn - 1));
            memmove(R->hist_U, R->hist_U + n, sizeof(double) * (size_t)(hn - 1) * n);
            hn--;
        }
        R->hist_t[hn] = t + h;
        memcpy(R->hist_U + (long)hn * n, G, sizeof(double) * (size_t)n);
        R->hist_n[0] = hn + 1;
    }
done:
    if (own) {
        int f = states_freed(R);
        if (!s)
            s = f;
    }
    return s;
}

/* The interval [t, t + H] in n equal base steps (run.Run.steps); the first starts from the states
 * in R->states (taken by the caller), the others from their own. Returns RUN_OK or what failed:
 * RUN_STALLED (fail: t, h, change, tolerance, iterations), RUN_LOOP (fail: why, iteration; r and
 * err the residual), RUN_FMI (fail: unit, function, status; or, for a plan, -1 - its op, -1 -
 * the function, status, the plan), RUN_CALLBACK (the Python raised), RUN_SINGULAR (I - J). */
int titop_run_steps(titop_run *R, double t, double H, int n, double tol, const double *scale)
{
    for (int s = 0; s < n; s++) {
        double ts = t + H * s / n, h = t + H * (s + 1) / n - ts;
        int st = base_step(R, ts, h, tol, scale, s > 0);
        if (st)
            return st;
    }
    return RUN_OK;
}
