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
