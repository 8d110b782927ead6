"""Reproducible Gaussian noise: the ``k``-th sample of a seeded sensor, the same number in
Python and in C (an exported FMU), from the seed and the sample index alone.

Two uniforms per component from SplitMix64 (Steele, Lea & Flood 2014) of the seed and the
component's counter, then Box-Muller: no generator state to carry, to save with an FMU's
state or to keep in step between engines.
"""

from __future__ import annotations

import math

import numpy as np

_MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """SplitMix64's output for the state ``x`` (64-bit unsigned arithmetic)."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def uniform(seed: int, counter: int) -> float:
    """A double in ``[0, 1)`` (53 random bits) for ``seed`` and ``counter``."""
    return (splitmix64((splitmix64(seed) + counter) & _MASK) >> 11) * 2.0 ** -53


def gaussian(seed: int, k: int, size: int) -> np.ndarray:
    """``size`` standard normal numbers of sample ``k`` (Box-Muller on two uniforms each)."""
    out = np.empty(size)
    for j in range(size):
        c = 2 * (k * size + j)
        u1, u2 = uniform(seed, c), uniform(seed, c + 1)
        out[j] = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
    return out


#: the same in C (``<stdint.h>``, ``<math.h>``)
C_SOURCE = """\
static uint64_t titop_splitmix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double titop_uniform(uint64_t seed, uint64_t counter)
{
    return (double)(titop_splitmix64(titop_splitmix64(seed) + counter) >> 11) * 0x1.0p-53;
}

static double titop_gaussian(uint64_t seed, uint64_t k, int size, int j)
{
    uint64_t c = 2 * (k * (uint64_t)size + (uint64_t)j);
    double u1 = titop_uniform(seed, c), u2 = titop_uniform(seed, c + 1);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
}
"""
