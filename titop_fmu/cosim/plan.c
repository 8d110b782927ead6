/* A plan of the loop solve (titop_fmu.cosim.loop.LoopSolver) run in C, where every unit of it
 * is an FMU: per unit call, in order, its inputs gathered from the outputs Y and the loop
 * unknowns z (and kept in Ucur, the value each coupling input is set to), fmi2SetReal,
 * fmi2GetReal, its outputs scattered into Y. What LoopSolver._run does in Python, a call of the
 * FMUs' own functions each, without the Python around them (plan.py beside it builds the tables).
 *
 * op (OP ints per unit call): the unit, the number of inputs from Y then from z, of outputs,
 * and the offsets of its tables: the inputs' value references (vr) and sources in Y (idx), their
 * positions in z and in Ucur (idx), the outputs' value references (vr) and positions in Y (idx).
 * The time each unit spends in its FMI calls is added to seconds[unit]. Returns 0, or the
 * failing call: 2 * op + (0 fmi2SetReal, 1 fmi2GetReal) + 1, its status in *status. */

#define _POSIX_C_SOURCE 199309L
#include <stddef.h>
#include <time.h>

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
