"""titop-fmu: non-linear TITOP multibody blocks, their FMUs and a co-simulation master."""

__version__ = "0.1.0"

#: the environment variables that set how many threads BLAS (numpy's, scipy's) starts with
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> bool:
    """BLAS on one thread in this process and the ones it starts, unless the environment says
    how many (read when numpy loads its BLAS: call it before). The command line's and the tests'
    matrices are small, where more threads cost more than they give, and OpenBLAS's threads,
    started with numpy, spin their first tenth of a second: 0.12 s of a second core in a
    20-second balloon run of 2 s. Whether it set them."""
    import os
    if any(name in os.environ for name in BLAS_THREADS):
        return False
    os.environ.update(dict.fromkeys(BLAS_THREADS, "1"))
    return True
