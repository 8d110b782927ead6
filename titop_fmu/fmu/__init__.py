"""TITOP blocks as FMI 2.0 co-simulation FMUs (thin pythonfmu adapters over the blocks).

* :mod:`.catalog` -- each FMU kind: block class, FMI parameters, port units (data);
* :mod:`.slave` -- the adapter, a pythonfmu slave owning a :class:`~titop_fmu.unit.BlockUnit`;
* :mod:`.model_description` -- units, dependencies and initial unknowns for the XML;
* :mod:`.build` -- ``titop-fmu build`` (:func:`~titop_fmu.fmu.build.build_all`);
* ``shim.c`` -- the FMI entry points of the FMU binary (loads Python, error status).

Only :mod:`.build` and :mod:`.slave` need pythonfmu; nothing here imports scipy.
"""
