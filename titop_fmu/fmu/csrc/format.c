/* repr() of a Python float, so that the standalone FMUs' messages read as the Python
 * blocks' do: the shortest digits that read back to the same double (the correctly rounded
 * ones of the first precision that does, which is the closest such text), in fixed
 * notation for decimal exponents -4 <= e < 16 ("0.0001", "1e+16", "1.5e-07", "-0.0",
 * "inf", "nan"). */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

char *titop_repr(double x, char *buf)
{
    if (isnan(x))
        return strcpy(buf, "nan");
    if (isinf(x))
        return strcpy(buf, x > 0 ? "inf" : "-inf");
    char sci[40], digits[20];
    int p = 1;
    for (; p < 17; p++) {                          /* "d.ddde+XX" with p digits */
        snprintf(sci, sizeof sci, "%.*e", p - 1, x);
        if (strtod(sci, NULL) == x)
            break;
    }
    snprintf(sci, sizeof sci, "%.*e", p - 1, x);
    const char *s = sci;
    int neg = *s == '-', n = 0;
    if (neg)
        s++;
    for (; *s && *s != 'e'; s++)
        if (*s != '.')
            digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0')          /* "1.500e+00" -> 1.5 */
        n--;
    digits[n] = 0;
    int e = atoi(s + 1);                           /* x = 0.digits * 10^(e + 1) */
    char *o = buf;
    if (neg)
        *o++ = '-';
    if (e >= -4 && e < 16) {
        if (e < 0) {
            o += sprintf(o, "0.");
            for (int k = -1; k > e; k--)
                *o++ = '0';
            o += sprintf(o, "%s", digits);
        } else {
            for (int k = 0; k <= e; k++)
                *o++ = k < n ? digits[k] : '0';
            *o++ = '.';
            if (n > e + 1)
                o += sprintf(o, "%s", digits + e + 1);
            else
                *o++ = '0';
        }
        *o = 0;
    } else {
        *o++ = digits[0];
        if (n > 1)
            o += sprintf(o, ".%s", digits + 1);
        sprintf(o, "e%c%02d", e < 0 ? '-' : '+', abs(e));
    }
    return buf;
}
