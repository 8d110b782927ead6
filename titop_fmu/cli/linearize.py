"""``titop-fmu linearize SYSTEM``: the linear model at the initial state or at an equilibrium,
or a family of them along a scheduling parameter (LPV)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import TitopError
from ..simulation import set_values
from ..scenarios import balloon
from ..titop.totals import SYSTEM
from .options import VIEW, animation_options, command, drawing, named_file, system_of, view_options, writable_file


def run(args):
    """``titop-fmu linearize SYSTEM [--trim [FREE ...]] [--inputs ...] [--outputs ...] --out FILE``:
    the linear model at the system's initial state or at the equilibrium found from it."""
    from ..linear import linearize
    from ..linear.trim import trim
    out = writable_file("--out", args.out)
    if out.suffix not in (".mat", ".npz"):
        raise TitopError(f"--out {out}: write a .mat or a .npz file")
    if args.mode is not None and not args.animate:
        raise TitopError("--mode N is the mode --animate shows: give --animate VIEW.html")
    view_options(args)
    view = named_file("--animate", args.animate, *VIEW) if args.animate else None
    cs = system_of(args)
    if view is not None:
        from ..titop.monolithic import is_closed_loop
        from ..viewer import Animation
        if args.grid or is_closed_loop(cs):
            raise TitopError("--animate shows a mode of one linear model of a plant: not with --grid, nor of a "
                             "system with time signals or control units")
        view = Animation(view, cs, args.title or Path(args.system).stem, args.trace, **drawing(args))
    outputs = args.outputs
    if outputs is None:                  # the record list, but the system's totals (no linear outputs)
        outputs = [r for r in cs.recorded if r.partition(".")[0] != SYSTEM or SYSTEM in cs.units]
        if len(outputs) < len(cs.recorded) and not args.quiet:
            print("the outputs: the record list without the system's totals (not outputs of a linear model)")
    if args.grid:
        return _linearize_family(args, cs, outputs, out)
    state, system = None, cs
    if args.trim is not None:
        eq = trim(cs, free=args.trim or None)
        if not args.quiet:
            print(f"equilibrium: {len(eq.free)} free unknown(s) {', '.join(eq.free)}; held: "
                  f"{'; '.join(eq.held) or 'nothing'}; accelerations <= {eq.residual:.2g} after "
                  f"{eq.iterations} Newton step(s)")
            found = eq.inputs
            for name in eq.free:
                if name in found:
                    print(f"  {name} = {found[name]:.12g}")
        state, system = eq.state, eq.system
    model = linearize(system, state, args.inputs, outputs)
    if view is not None:
        from ..viewer.modes import write_mode
        write_mode(view, system, model, 1 if args.mode is None else args.mode)
    model.save(out)
    if not args.quiet:
        print(model.modes_table())
        print(f"wrote {out}: A {model.A.shape[0]}x{model.A.shape[1]}, B {model.B.shape[0]}x{model.B.shape[1]}, "
              f"C {model.C.shape[0]}x{model.C.shape[1]}, D {model.D.shape[0]}x{model.D.shape[1]}, with the names "
              "of states, inputs and outputs")
        if view is not None:
            print(f"wrote {view.path} ({view.title})")


def _grid(text) -> tuple:
    """``NAME=START:STOP:N`` or ``NAME=V1,V2,...`` -> ``(name, values)``: values in SI, or
    with their units (``0 deg:20 deg:5``), or with one unit after them all (``0:20:5deg``,
    ``1,2,3 mm``), converted to SI."""
    from ..quantities import UnitError, has_unit, quantity
    name, sep, values = text.partition("=")
    m = re.fullmatch(r"(.*?)\s*([A-Za-z\u00b0\u00b5][^:,]*)", values.strip())
    common = m.group(2) if m and not any(has_unit(v) for v in re.split(r"[:,]", m.group(1))) else ""
    body = m.group(1) if common else values

    def si(v):
        return quantity(f"{v} {common}" if common else v, None, f"--grid {text}")
    try:
        if ":" in body:
            lo, hi, n = body.split(":")
            grid = np.linspace(si(lo), si(hi), int(n))
        else:
            grid = np.array([si(v) for v in body.split(",")])
    except (ValueError, UnitError):
        grid = None
    if not sep or not name or grid is None or len(grid) < 2 or not np.all(np.diff(grid) > 0) \
            or not np.all(np.isfinite(grid)):
        raise TitopError(f"--grid {text}: expected NAME=START:STOP:N or NAME=V1,V2,... with at least two "
                         "increasing values (numbers in SI, or with their units: 0 deg:20 deg:5)")
    return name.strip(), grid


def _is_parameter(cs, name) -> bool:
    """``name`` is a scalar parameter of a unit of ``cs`` (``link1.mass``) or of its
    ``[parameters]`` (``wing_mass``), not an input."""
    from ..fmu import catalog
    if name in cs.parameters:
        from ..cosim.values import evaluate
        return np.ndim(evaluate(cs.parameters, "parameters")[name]) == 0
    unit, _, var = name.partition(".")
    spec = cs.units.get(unit)
    try:
        params = catalog.interface_of(spec.model).params if spec is not None else ()
    except KeyError:
        return False
    return any(p.name == var and not p.shape for p in params)


def _linearize_family(args, cs, outputs, out):
    """``--grid``: the family of linear models along a scheduling parameter (a balloon scenario
    value, or a state or input name), its equilibria continued along the grid."""
    from ..linear.lpv import family
    name, grid = _grid(args.grid)
    if args.trim is None:
        raise TitopError("--grid needs --trim: the family's models are at equilibria")
    system = cs
    if args.system == "balloon" and name in balloon.DEFAULTS:
        overrides = set_values(args.set)
        if np.shape(balloon.DEFAULTS[name]):
            raise TitopError(f"--grid {name}: a scalar scenario value is needed")
        for value in (grid[0], grid[-1]):
            balloon.checked({**overrides, name: float(value)})

        def system(value):
            return balloon.system({**overrides, name: float(value)})
    elif args.system != "balloon" and _is_parameter(cs, name):       # a parameter of the file
        from ..titop import overrides as ov
        for value in (grid[0], grid[-1]):
            ov.apply(cs, {name: float(value)})

        def system(value):
            return ov.apply(cs, {name: float(value)}, check=False)
    fam = family(system, name, grid, free=args.trim or None, inputs=args.inputs, outputs=outputs)
    fam.save(out)
    if not args.quiet:
        print(f"{len(grid)} linear models along {name} in [{grid[0]:g}, {grid[-1]:g}], {len(fam.states)} states; "
              "the linear interpolation against the exact model at each mid-point:")
        print(fam.errors_table())
        print(f"wrote {out}")


def add(sub):
    """The subcommand and its options."""
    p = command(sub, "linearize", help="the linear model (A, B, C, D with names, and its modes) at the initial "
                                       "state or at an equilibrium; writes .mat or .npz")
    p.add_argument("system", help="'balloon' (with --set) or a system file (TOML or JSON, see examples/)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a value as for simulate: a balloon scenario value, or a system file's unit "
                        "parameter or free input, e.g. link1.mass=1.2 (repeatable)")
    p.add_argument("--trim", nargs="*", metavar="FREE",
                   help="first find an equilibrium near the initial state; FREE: the unknowns (a state such as "
                        "slider.q, a base's v, w, r or attitude, an input such as balloon.ext.w[2]); none given: "
                        "every joint position and base attitude, the neutral directions held")
    p.add_argument("--inputs", nargs="+", metavar="NAME",
                   help="the inputs (columns of B and D): scalars or ports, e.g. balloon.ext.w slider.joint.tau "
                        "(default: every free input)")
    p.add_argument("--outputs", nargs="*", metavar="NAME",
                   help="the outputs (rows of C and D): block outputs, e.g. pendulum1.joint.q[3] balloon.c1.m "
                        "(default: the system's record list)")
    p.add_argument("--grid", metavar="NAME=START:STOP:N",
                   help="a family of models (LPV) along a scheduling parameter: a balloon scenario value "
                        "(m_P2=1:5:5), a unit parameter of a system file (link1.mass=0.5:2:4), a state held "
                        "(pendulum1.q=0:20:5deg) or an input; needs --trim; also NAME=V1,V2,...")
    p.add_argument("--out", required=True, help="the file to write: FILE.mat (MATLAB) or FILE.npz")
    p.add_argument("--quiet", action="store_true", help="print nothing")
    g = p.add_argument_group("3-D view of a mode (titop-fmu animate --mode)")
    g.add_argument("--animate", metavar="VIEW.html", help="also write a 3-D view of a mode of the model moving")
    g.add_argument("--mode", type=int, metavar="N", help="the mode --animate shows: the N-th row of the modes "
                                                          "table below its zero line (default 1, the slowest)")
    animation_options(g)
    p.set_defaults(func=run)
