/* The control blocks of a closed loop in a standalone assembly FMU (model.h: TitopControl),
 * equation for equation those of titop_fmu/control/blocks.py, whose module docstring gives the
 * discrete semantics (at t_k: sample u_k, output y_k held until t_(k+1), update the state).
 * A block's data p (its c_data() there) is, by kind:
 *
 *   TITOP_STATE_SPACE   A (n x n), B (n x n_u), C (n_y x n), D (n_y x n_u), row-major; n its
 *                       states (n_x, or with a sample time n_d - n_y: d = [x_k, y held])
 *   TITOP_GAIN          K (n_y x n_u)
 *   TITOP_SUM           the signs, one per input port of n_y scalars
 *   TITOP_SATURATION    lower (n_y), upper (n_y)
 *   TITOP_RATE_LIMITER  rising, falling, Td
 *   TITOP_PID           kp, ki, kd, tf, lower, upper, tt (infinite: no anti-windup)
 *   TITOP_ZOH           nothing
 *   TITOP_SENSOR        bias (n_y), noise (n_y); the noise drawn by c->gaussian (noise.py's C twin)
 *
 * x, d, u are the block's own continuous states, discrete states and inputs. */

#include <math.h>

#include "model.h"

/* y = M v, M n x m row-major, added to y if add */
static void product(const double *M, int n, int m, const double *v, double *y, int add)
{
    for (int i = 0; i < n; i++) {
        double s = 0.0;
        for (int j = 0; j < m; j++)
            s += M[m * i + j] * v[j];
        y[i] = add ? y[i] + s : s;
    }
}

static double clip(double v, double lower, double upper)
{
    return fmin(fmax(v, lower), upper);
}

/* the PID's v = kp e + x_i + kd (e - x_f) / tf */
static double pid_v(const double *p, const double *x, double e)
{
    return p[0] * e + x[0] + (p[2] != 0.0 ? p[2] * (e - x[1]) / p[3] : 0.0);
}

static int states(const TitopControl *c)           /* a state space's n */
{
    return c->sample_time > 0 ? c->n_d - c->n_y : c->n_x;
}

void titop_control_output(const TitopControl *c, const double *x, const double *d, const double *u, double *y)
{
    const double *p = c->p;
    int n = states(c);
    switch (c->kind) {
    case TITOP_STATE_SPACE:
        if (c->sample_time > 0) {                                    /* y held */
            for (int i = 0; i < c->n_y; i++)
                y[i] = d[n + i];
        } else {                                                     /* C x + D u */
            product(p + n * n + n * c->n_u, c->n_y, n, x, y, 0);
            product(p + n * n + n * c->n_u + c->n_y * n, c->n_y, c->n_u, u, y, 1);
        }
        break;
    case TITOP_GAIN:
        product(p, c->n_y, c->n_u, u, y, 0);
        break;
    case TITOP_SUM:
        for (int j = 0; j < c->n_y; j++) {
            double s = 0.0;
            for (int i = 0; i < c->n_u / c->n_y; i++)
                s += p[i] * u[c->n_y * i + j];
            y[j] = s;
        }
        break;
    case TITOP_SATURATION:
        for (int i = 0; i < c->n_y; i++)
            y[i] = clip(u[i], p[i], p[c->n_y + i]);
        break;
    case TITOP_RATE_LIMITER:
        y[0] = x[0];
        break;
    case TITOP_PID:
        y[0] = clip(pid_v(p, x, u[0]), p[4], p[5]);
        break;
    case TITOP_ZOH:
        for (int i = 0; i < c->n_y; i++)
            y[i] = d[i];
        break;
    case TITOP_SENSOR:
        for (int i = 0; i < c->n_y; i++)
            y[i] = c->sample_time > 0 ? d[i] : u[i] + p[i];
        break;
    }
}

void titop_control_derivative(const TitopControl *c, const double *x, const double *d, const double *u, double *xdot)
{
    const double *p = c->p;
    (void)d;
    if (c->kind == TITOP_STATE_SPACE) {                               /* A x + B u */
        int n = c->n_x;
        product(p, n, n, x, xdot, 0);
        product(p + n * n, n, c->n_u, u, xdot, 1);
    } else if (c->kind == TITOP_RATE_LIMITER) {
        xdot[0] = clip((u[0] - x[0]) / p[2], p[1], p[0]);
    } else if (c->kind == TITOP_PID) {                              /* back-calculation anti-windup */
        double e = u[0], v = pid_v(p, x, e), y = clip(v, p[4], p[5]);
        xdot[0] = p[1] * e + (isfinite(p[6]) ? (y - v) / p[6] : 0.0);
        xdot[1] = (e - x[1]) / p[3];
    }
}

void titop_control_update(const TitopControl *c, long long k, const double *x, double *d, const double *u)
{
    const double *p = c->p;
    (void)x;
    if (c->kind == TITOP_STATE_SPACE) {              /* x[k+1] = A x[k] + B u[k], y[k] = C x[k] + D u[k] */
        int n = states(c);
        double xk[n > 0 ? n : 1];
        for (int i = 0; i < n; i++)
            xk[i] = d[i];
        product(p, n, n, xk, d, 0);
        product(p + n * n, n, c->n_u, u, d, 1);
        product(p + n * n + n * c->n_u, c->n_y, n, xk, d + n, 0);
        product(p + n * n + n * c->n_u + c->n_y * n, c->n_y, c->n_u, u, d + n, 1);
    } else if (c->kind == TITOP_ZOH) {
        for (int i = 0; i < c->n_y; i++)
            d[i] = u[i];
    } else if (c->kind == TITOP_SENSOR) {            /* u(t_k) + bias + noise_k */
        for (int i = 0; i < c->n_y; i++)
            d[i] = u[i] + p[i] + (p[c->n_y + i] != 0.0 ? p[c->n_y + i] * c->gaussian(c->seed, k, c->n_y, i) : 0.0);
    }
}
