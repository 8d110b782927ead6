"""See a run move: a self-contained HTML 3-D view of a system of TITOP units (``titop-fmu
animate``, ``titop-fmu simulate ... --animate VIEW.html``).

:mod:`.poses` places every body from the recorded outputs, :mod:`.scene` samples and
writes its frames, :mod:`.html` inlines the renderer (``viewer.js``, plain JavaScript on a
Canvas 2-D, no library) into one file that opens offline.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np

from ..cosim import CoSystem
from ..errors import TitopError
from ..io import write_atomically
from ..scenarios import balloon
from ..titop import monolithic
from ..titop.records import Records
from . import deform, html, poses, scene
from .poses import model, needed

__all__ = ["Animation", "model", "needed"]


class Animation:
    """The view asked of a run of ``cs``, written to ``path``: the model and the traces are
    checked when it is made (before the run); :meth:`recording` gives the system with the
    outputs the view needs added to its record list; a ``write_*`` method writes the file.
    ``scale``: the factor the flexible bodies' elastic displacements are drawn times (None:
    chosen, :func:`.deform.auto_scale`); ``beams``: flexible beams at all their nodes
    (:func:`~titop_fmu.titop.flexible.drawn_beams`), drawn through them."""

    def __init__(self, path, cs: CoSystem, title: str, traces=(), scale=None, beams=None):
        self.path, self.cs, self.title, self.traces = Path(path), cs, title, list(traces or ())
        self.scale = deform.checked_scale(scale)
        self.model = poses.model(cs, beams)
        if not self.model.bodies:
            raise TitopError("nothing to animate: the system has no TITOP body (units that are FMU files, "
                             "as in an SSP package, or functions are not drawn)")
        scene.parse_traces(self.model, self.traces)

    def extra(self) -> list:
        """The outputs to record besides those ``cs`` records."""
        return needed(self.model, Records(self.cs).labels)

    def recording(self) -> CoSystem:
        """``cs`` recording also the outputs the view needs (appended: the user's come first)."""
        cs = copy.copy(self.cs)
        cs.recorded = list(self.cs.recorded) + self.extra()
        return cs

    def write(self, t, columns: dict):
        """The view of the run whose outputs are ``columns`` (``{label: (len(t),) array}``)."""
        t = np.asarray(t, dtype=float)
        rows = scene.frames(t)
        cols = {k: np.asarray(v, dtype=float)[rows] for k, v in columns.items()}
        placed = poses.poses(self.model, cols, len(rows))
        deformed, why = deform.deformations(self.model, cols, len(rows))
        notes = [f"{unit}: {why}" for unit, why in poses.unplaced(self.model).items()] + why
        page = html.render(scene.scene(self.model, t[rows], placed, self.title, self.traces, notes, deformed,
                                       self.scale))
        write_atomically(self.path, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))

    def write_balloon(self, t, values):
        """The view of a run of the built-in balloon from its CSV columns ``x..theta2``."""
        self.write(t, balloon.motion_outputs(values))

    def write_twin(self, tr):
        """The view of an in-process run (a :class:`~titop_fmu.system.Trajectory` of the
        monolithic twin of ``cs``, or a :class:`~titop_fmu.titop.closedloop.ClosedLoopTrajectory`
        when ``cs`` has time signals or control units): the outputs it needs evaluated at the
        shown samples only, the flexible bodies' modal coordinates taken from the states."""
        rows = scene.frames(tr.t)
        names = tr.system.state_names                    # a System's method, a closed loop's list
        states = deform.modal_states(self.model, names() if callable(names) else names, tr.y[rows])
        cs = copy.copy(self.cs)
        cs.recorded = needed(self.model, states)
        if hasattr(tr, "pieces"):                   # a closed loop: its outputs at each row's time and piece
            shown = dataclasses.replace(tr, t=tr.t[rows], y=tr.y[rows], d=tr.d[rows],
                                        pieces=[tr.pieces[i] for i in rows])
            values = tr.system.recorded(shown, Records(cs, tr.system.types))
        else:
            values = monolithic.recorded(cs, tr.system, tr.y[rows], kernel=tr.kernel)
        self.write(tr.t[rows], {**dict(zip(cs.recorded, values.T)), **states})
