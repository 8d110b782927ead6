"""The FMI adapter of an assembly FMU: the block FMUs' slave (:class:`~titop_fmu.fmu.slave.TitopSlave`,
errors, exact FMU state) over an :class:`~.assembly.AssemblyInterface`, whose system the FMU
carries as ``resources/titop_system.json`` (a system file, :mod:`titop_fmu.cosim.systemfile`)."""

from __future__ import annotations

import json
from pathlib import Path

from ..fmu.slave import TitopSlave
from .assembly import assembly_interface

#: the system file inside the FMU, under resources/
SYSTEM_RESOURCE = "titop_system.json"


class AssemblySlave(TitopSlave):
    """A generated subclass per FMU is named by its model identifier; :attr:`SYSTEM` is set
    only while the FMU is built (the FMU reads its resource)."""

    SYSTEM = None
    DERIVATIVES = False         # an assembly unit gives none

    def interface(self):
        system = self.SYSTEM
        if system is None:
            system = json.loads((Path(self.resources) / SYSTEM_RESOURCE).read_text(encoding="utf-8"))
        return assembly_interface(system, type(self).__name__)
