/* Forward-mode derivatives of the C kernel (kernel.c): the same source compiled once more
 * with every `double` a dual number, a value and TITOP_DUAL_WIDTH tangents that every
 * operation carries by the chain rule. One call of titop_dual_evaluate gives the state
 * derivatives and outputs at a state and their derivatives along TITOP_DUAL_WIDTH
 * directions of (states, inputs, parameters), exact to rounding: no step size, no
 * truncation error (titop_fmu/dual.py loads it; titop_fmu/linear/ uses it).
 *
 * kernel.c is included unchanged, inside a namespace, after `#define double dual`: it must
 * stay valid C++ (no C-only syntax such as designated initializers or implicit casts from
 * void *); tests/spatial/test_dual.py holds this file's values equal to kernel.c's, bit
 * for bit, and its tangents equal to finite differences.
 *
 * Branches compare values only (the branch taken at the point is differentiated); `==`
 * compares values and tangents, so that an elimination step skipped for a zero
 * multiplier (solve() in kernel.c) is skipped only when its derivative is zero too; the
 * square root of an exact zero with zero tangents has zero tangents (the rotation vector
 * of a loop closure at rest: sqrt(a . a) with a = 0). */

#include <math.h>
#include <string.h>

#ifndef TITOP_DUAL_WIDTH
#define TITOP_DUAL_WIDTH 8
#endif

namespace titop_dual {

enum { W = TITOP_DUAL_WIDTH };

struct dual {
    double v, d[W];
    dual() = default;                                   /* trivial: memset/memcpy as on doubles */
    constexpr dual(double x) : v(x), d{} {}             /* constexpr: static constants need no guard */
};

static inline dual lin(double a, const dual &x, double c)      /* a x + c (tangents a dx) */
{
    dual r;
    r.v = a * x.v + c;
    for (int i = 0; i < W; i++) r.d[i] = a * x.d[i];
    return r;
}

static inline dual lin2(double a, const dual &x, double b, const dual &y, double value)
{                                                                   /* tangents a dx + b dy */
    dual r;
    r.v = value;
    for (int i = 0; i < W; i++) r.d[i] = a * x.d[i] + b * y.d[i];
    return r;
}

static inline dual operator+(const dual &x, const dual &y) { return lin2(1.0, x, 1.0, y, x.v + y.v); }
static inline dual operator-(const dual &x, const dual &y) { return lin2(1.0, x, -1.0, y, x.v - y.v); }
static inline dual operator*(const dual &x, const dual &y) { return lin2(y.v, x, x.v, y, x.v * y.v); }
static inline dual operator/(const dual &x, const dual &y)
{
    double q = x.v / y.v;
    return lin2(1.0 / y.v, x, -q / y.v, y, q);
}
static inline dual operator+(const dual &x, double c) { return lin(1.0, x, c); }
static inline dual operator+(double c, const dual &x) { return lin(1.0, x, c); }
static inline dual operator-(const dual &x, double c) { return lin(1.0, x, -c); }
static inline dual operator-(double c, const dual &x) { return lin(-1.0, x, c); }
static inline dual operator*(const dual &x, double c) { return lin(c, x, 0.0); }
static inline dual operator*(double c, const dual &x) { return lin(c, x, 0.0); }
static inline dual operator/(const dual &x, double c) { return lin(1.0 / c, x, 0.0); }
static inline dual operator-(const dual &x) { return lin(-1.0, x, 0.0); }
static inline dual &operator+=(dual &x, const dual &y) { return x = x + y; }
static inline dual &operator-=(dual &x, const dual &y) { return x = x - y; }
static inline dual &operator*=(dual &x, const dual &y) { return x = x * y; }
static inline dual &operator/=(dual &x, const dual &y) { return x = x / y; }

static inline bool operator<(const dual &x, const dual &y) { return x.v < y.v; }
static inline bool operator>(const dual &x, const dual &y) { return x.v > y.v; }
static inline bool operator<=(const dual &x, const dual &y) { return x.v <= y.v; }
static inline bool operator>=(const dual &x, const dual &y) { return x.v >= y.v; }
static inline bool operator==(const dual &x, const dual &y)
{
    if (x.v != y.v)
        return false;
    for (int i = 0; i < W; i++)
        if (x.d[i] != y.d[i])
            return false;
    return true;
}
static inline bool operator!=(const dual &x, const dual &y) { return !(x == y); }

static inline dual chain(const dual &x, double value, double slope)    /* f(x), f'(x) = slope */
{
    dual r;
    r.v = value;
    for (int i = 0; i < W; i++) r.d[i] = slope * x.d[i];
    return r;
}

static inline bool flat(const dual &x)
{
    for (int i = 0; i < W; i++)
        if (x.d[i] != 0.0)
            return false;
    return true;
}

static inline dual cos(const dual &x) { return chain(x, ::cos(x.v), -::sin(x.v)); }
static inline dual sin(const dual &x) { return chain(x, ::sin(x.v), ::cos(x.v)); }
static inline dual sqrt(const dual &x)
{
    double s = ::sqrt(x.v);
    return s == 0.0 && flat(x) ? dual(0.0) : chain(x, s, 0.5 / s);
}
static inline dual fabs(const dual &x) { return x.v < 0.0 ? -x : x; }
static inline dual fmax(const dual &x, const dual &y) { return x.v >= y.v ? x : y; }
static inline dual fmin(const dual &x, const dual &y) { return x.v <= y.v ? x : y; }
static inline dual pow(const dual &x, double p) { return chain(x, ::pow(x.v, p), p * ::pow(x.v, p - 1.0)); }
static inline dual atan2(const dual &y, const dual &x)
{
    double r2 = x.v * x.v + y.v * y.v;
    return r2 == 0.0 ? dual(::atan2(y.v, x.v)) : lin2(-y.v / r2, x, x.v / r2, y, ::atan2(y.v, x.v));
}
static inline dual hypot(const dual &x, const dual &y)
{
    double h = ::hypot(x.v, y.v);
    return h == 0.0 ? dual(0.0) : lin2(x.v / h, x, y.v / h, y, h);
}
static inline bool isfinite(const dual &x)
{
    if (!::isfinite(x.v))
        return false;
    for (int i = 0; i < W; i++)
        if (!::isfinite(x.d[i]))
            return false;
    return true;
}

#define double dual
#include "kernel.c"
#undef double

}  /* namespace titop_dual */

using titop_dual::dual;

extern "C" {

/* the number of tangents each value carries */
int titop_dual_width(void) { return titop_dual::W; }

/* the workspace of nb blocks, in duals (titop_workspace) */
int titop_dual_workspace(int nb, const int *I) { return titop_dual::titop_workspace(nb, I); }

/* titop_motion on duals: block b's motion vector (18 duals) in the workspace ws */
dual *titop_dual_motion(int b, const int *I, dual *ws) { return titop_dual::titop_motion(b, I, ws); }

/* titop_evaluate on duals: the parameters, constant inputs, states, state derivatives and
 * outputs are arrays of duals (1 + TITOP_DUAL_WIDTH doubles each: the value, then its
 * tangents) */
int titop_dual_evaluate(int nb, const int *I, const dual *par, const dual *const *ptr, dual *ws,
                        const dual *y, dual *ydot, dual *out)
{
    return titop_dual::titop_evaluate(nb, I, par, ptr, ws, y, ydot, out);
}

}
