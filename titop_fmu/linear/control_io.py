"""A TITOP system (closed loops and time signals included) as a python-control nonlinear
input/output system (:func:`nonlinear_io`): ``control.interconnect`` connects it to
controllers designed in python-control, ``control.input_output_response`` simulates it and
``control.linearize`` linearizes it, as any other system.

Its states are the system's own (:meth:`~titop_fmu.titop.closedloop.ClosedLoop.initial_state`:
the plant's, a base's quaternion included, then its control blocks'); its inputs the free
inputs named (the plant's, or a control unit's constants), its outputs any recordable
quantity. Signal names follow :func:`~.model.control_names` (``.`` written ``_``). A discrete
block has no place in a continuous nonlinear system: it is refused.
"""

from __future__ import annotations


from ..cosim import CoSystem
from ..errors import TitopError
from ..titop.closedloop import ClosedLoop
from ..titop.records import Records, recording
from .model import control_names, python_control


def nonlinear_io(cs: CoSystem, inputs=(), outputs=None, name: str = "titop"):
    """``control.NonlinearIOSystem`` of ``cs`` with the free ``inputs`` (scalars or ports) and
    ``outputs`` (default: its record list); its attribute ``x0`` is the initial state."""
    control = python_control()
    loop = ClosedLoop(cs)
    loop.use_kernel()
    discrete = [n.name for n in loop.nodes if n.block.discrete]
    if discrete:
        raise TitopError(f"{discrete[0]!r} is a discrete block (sample_time): a python-control nonlinear "
                         "system here is continuous; model the sampling in python-control instead")
    setters = [setter for ref in inputs for setter in loop.input_setters(ref)]
    records = Records(recording(cs, list(cs.recorded if outputs is None else outputs)), loop.types)
    d = loop.initial_discrete()

    def apply(u):
        for (_, set_value), v in zip(setters, u):
            set_value(v)

    def updfcn(t, x, u, params):
        apply(u)
        return loop.evaluate(t, x, d)[0]

    def outfcn(t, x, u, params):
        apply(u)
        return loop.outputs_of(t, x, d, records)

    x0 = loop.initial_state()
    sys = control.nlsys(updfcn, outfcn, states=control_names(loop.state_names), name=name,
                        inputs=control_names([n for n, _ in setters]), outputs=control_names(records.labels))
    sys.x0 = x0
    return sys
