/* The attitude algebra of titop_fmu/spatial.py in C, operation for operation: the DCM of
 * 3-2-1 Euler angles and back. Included by the blocks' kernel (kernel.c, also as C++ with
 * double standing for dual numbers: kernel_dual.cpp) and by the co-simulation master's C
 * library (cosim/master.c); include it after <math.h>. */

#ifndef TITOP_SPATIAL_H
#define TITOP_SPATIAL_H

static inline void dcm_from_euler(const double *Th, double *P)          /* P_./i(Theta), 3-2-1 */
{
    double cf = cos(Th[0]), sf = sin(Th[0]), ct = cos(Th[1]), st = sin(Th[1]), cp = cos(Th[2]), sp = sin(Th[2]);
    P[0] = cp * ct; P[1] = cp * st * sf - sp * cf; P[2] = cp * st * cf + sp * sf;
    P[3] = sp * ct; P[4] = sp * st * sf + cp * cf; P[5] = sp * st * cf - cp * sf;
    P[6] = -st;     P[7] = ct * sf;                P[8] = ct * cf;
}

/* Theta(P), theta in [-pi/2, pi/2], c_theta = cos(theta) = |(P00, P10)| given (spatial._euler) */
static inline void euler_angles_given(const double *P, double c_theta, double *Th)
{
    Th[1] = atan2(-P[6], c_theta);
    if (c_theta > 1e-12) {
        Th[0] = atan2(P[7], P[8]);
        Th[2] = atan2(P[3], P[0]);
    } else {                                    /* gimbal lock: phi = 0 */
        Th[0] = 0.0;
        Th[2] = atan2(-P[1], P[4]);
    }
}

static inline void euler_angles(const double *P, double *Th)
{
    euler_angles_given(P, hypot(P[0], P[3]), Th);
}

#endif
