"""The in-process balloon run the tests compare against (shared by fixtures and tests), and the
parameters a system's units take (to compare systems defined in different places)."""

import warnings

from titop_fmu.errors import ParameterWarning
from titop_fmu.fmu import catalog
from titop_fmu.scenarios import balloon


def run_balloon(overrides=None, stop=20.0, tol=1e-12):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ParameterWarning)
        s = balloon.build(overrides)
    return s, s.simulate(stop, 0.01, rtol=tol, atol=tol)


def effective_parameters(cs) -> dict:
    """``{unit: (model, {FMI parameter: value})}`` with the defaults the units take."""
    out = {}
    for name, u in cs.units.items():
        iface = catalog.interface_of(u.model)
        values = dict(zip((p[0] for p in iface.param_scalars), iface.defaults()))
        values.update(u.parameters)
        out[name] = (u.model, {k: float(v) for k, v in values.items()})
    return out
