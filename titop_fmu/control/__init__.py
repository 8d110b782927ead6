"""Time signals and control blocks: what closes a loop around a plant.

Generic and FMI-free, like :mod:`titop_fmu.cosim` above it: :mod:`.expressions` (a safe
expression language), :mod:`.signals` (functions of time for any input: expressions,
tables, the standard sources) and :mod:`.blocks` (state space, PID, gain, sum, saturation,
rate limiter, sample-and-hold), each with its C form for exported FMUs.
"""
