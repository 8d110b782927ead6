"""SSP 1.0 packages (System Structure and Parameterization, Modelica Association): a system of
FMU units written as ``SystemStructure.ssd`` with its FMUs in ``resources/`` (:func:`write`)
and read back as a :class:`~.graph.CoSystem` the master runs (:func:`read`).

The mapping (the one :mod:`.systemfile` notes):

* a unit is an ``ssd:Component`` whose ``source`` is its FMU (``resources/<file>.fmu``), with a
  connector for every scalar it connects, is given or records;
* its parameters and its constant inputs are one ``ssv:ParameterSet``
  (``resources/<unit>.ssv``) bound to it by an ``ssd:ParameterBinding``: values of its
  ``parameter`` and ``input`` connectors (a start value for an input no connection feeds);
* a connection is one ``ssd:Connection`` per scalar; a port connection or a link is several
  (a link: motion down, wrench up);
* the recorded outputs, in order, are an annotation of the system (:data:`RECORD_ANNOTATION`):
  not system output connectors, which hosts such as libcosim do not read; an entry that is no
  output of its unit, a quantity the unit factory derives from outputs (a TITOP body's inertial
  position), is written as it is given;
* the stop time is the ``ssd:DefaultExperiment``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from xml.dom.minidom import parseString
from xml.etree.ElementTree import Element, SubElement, fromstring, register_namespace, tostring

import numpy as np

from ..archive import write_zip
from ..errors import ConnectionError_
from .fmpy_unit import unzip_folder
from .graph import CoSystem
from .systemfile import SystemFile

NS = {"ssd": "http://ssp-standard.org/SSP1/SystemStructureDescription",
      "ssc": "http://ssp-standard.org/SSP1/SystemStructureCommon",
      "ssv": "http://ssp-standard.org/SSP1/SystemStructureParameterValues"}
FMU_TYPE = "application/x-fmu-sharedlibrary"
#: the annotation of the system listing the recorded outputs (``<Recorded><Variable element= name=/>``)
RECORD_ANNOTATION = "org.titop-fmu.cosim.recorded"


def _q(tag: str) -> str:
    prefix, _, name = tag.partition(":")
    return f"{{{NS[prefix]}}}{name}"


def _xml(root: Element) -> bytes:
    for prefix, uri in NS.items():
        register_namespace(prefix, uri)
    return parseString(tostring(root, "UTF-8")).toprettyxml(indent="  ", encoding="UTF-8")


def _scalar_pairs(system: CoSystem, types: dict) -> list:
    """``[(unit, output scalar, unit, input scalar)]`` of every connection of ``system``."""
    out = []
    for a, b in system.connections:
        ua, _, va = a.partition(".")
        ub, _, vb = b.partition(".")
        outs, ins = types[ua].scalars(va, "output"), types[ub].scalars(vb, "input")
        if not outs or len(outs) != len(ins):
            raise ConnectionError_(f"cannot write the connection {a} -> {b} (sizes {len(outs)}, {len(ins)})")
        out += [(ua, o, ub, i) for o, i in zip(outs, ins)]
    return out


def write(system: CoSystem, types: dict, fmus: dict, out, name: str = "system", stop: float | None = None):
    """Write the SSP ``out`` of ``system`` (every unit an FMU: ``fmus`` ``{unit: FMU path}``;
    ``types`` ``{unit: UnitType}`` gives the scalars of ports and the parameters' types)."""
    out = Path(out)
    sources, files = {}, {}
    for unit, path in fmus.items():
        path = Path(path)
        source = f"resources/{path.name}"
        if source in files and files[source] != path.resolve():
            source = f"resources/{unit}_{path.name}"
        files[source] = path.resolve()
        sources[unit] = source
    pairs = _scalar_pairs(system, types)
    values = {unit: dict(spec.parameters) for unit, spec in system.units.items()}   # FMI scalars
    for ref, value in system.inputs.items():
        unit, _, var = ref.partition(".")
        scalars = types[unit].scalars(var, "input") or [var]
        flat = np.ravel(np.asarray(value, dtype=float))
        if len(flat) != len(scalars):
            raise ConnectionError_(f"input {ref} takes {len(scalars)} values, got {len(flat)}")
        values[unit].update(zip(scalars, flat.tolist()))
    recorded = []
    for ref in system.recorded:         # a quantity derived from outputs (a factory's) as it is written
        unit, _, var = ref.partition(".")
        recorded += [(unit, o) for o in types[unit].scalars(var, "output") or [var]]

    root = Element(_q("ssd:SystemStructureDescription"), version="1.0", name=name)
    sysel = SubElement(root, _q("ssd:System"), name=name)
    elements = SubElement(sysel, _q("ssd:Elements"))
    ssv = {}
    for unit in system.units:
        t = types[unit]
        comp = SubElement(elements, _q("ssd:Component"), name=unit, type=FMU_TYPE, source=sources[unit])
        used = {o for u, o, _, _ in pairs if u == unit} | {o for u, o in recorded if u == unit}
        used_in = {i for _, _, u, i in pairs if u == unit}
        conns = SubElement(comp, _q("ssd:Connectors"))
        for var in t.variables.values():
            if var.name in used or var.name in used_in or var.name in values[unit]:
                if var.causality not in ("input", "output", "parameter"):
                    raise ConnectionError_(f"{unit}.{var.name}: a {var.causality} cannot be a connector")
                c = SubElement(conns, _q("ssd:Connector"), name=var.name, kind=var.causality)
                SubElement(c, _q(f"ssc:{var.type}"))
        unknown = sorted(set(values[unit]) - set(t.variables))
        if unknown:
            raise ConnectionError_(f"unit {unit!r} has no variable(s) {unknown}")
        if values[unit]:
            SubElement(SubElement(comp, _q("ssd:ParameterBindings")), _q("ssd:ParameterBinding"),
                       source=f"resources/{unit}.ssv")
            ps = Element(_q("ssv:ParameterSet"), version="1.0", name=unit)
            params = SubElement(ps, _q("ssv:Parameters"))
            for pname, v in values[unit].items():
                kind = t.variables[pname].type
                p = SubElement(params, _q("ssv:Parameter"), name=pname)
                SubElement(p, _q(f"ssv:{kind}"), value=repr(float(v)) if kind == "Real" else str(int(v)))
            ssv[f"resources/{unit}.ssv"] = _xml(ps)
    connections = SubElement(sysel, _q("ssd:Connections"))
    for ua, o, ub, i in pairs:
        SubElement(connections, _q("ssd:Connection"), startElement=ua, startConnector=o, endElement=ub,
                   endConnector=i)
    if recorded:
        note = SubElement(SubElement(sysel, _q("ssd:Annotations")), _q("ssc:Annotation"), type=RECORD_ANNOTATION)
        listed = SubElement(note, "Recorded")
        for unit, o in recorded:
            SubElement(listed, "Variable", element=unit, name=o)
    if stop is not None:
        SubElement(root, _q("ssd:DefaultExperiment"), startTime="0.0", stopTime=repr(float(stop)))

    entries = {"SystemStructure.ssd": _xml(root), **ssv}
    entries.update({k: p.read_bytes() for k, p in files.items()})
    return write_zip(out, entries)


def read(path, unpack_dir=None) -> SystemFile:
    """The system of the SSP ``path`` (its FMUs unpacked into ``unpack_dir``, default a
    temporary folder removed at exit); ``simulation`` has the stop time if given."""
    path = Path(path)
    if not zipfile.is_zipfile(path):
        raise ConnectionError_(f"{path}: not an SSP package (a zip file)")
    if unpack_dir is None:
        unpack_dir = unzip_folder()
    unpack_dir = Path(unpack_dir)
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        if "SystemStructure.ssd" not in names:
            raise ConnectionError_(f"{path}: no SystemStructure.ssd")
        root = fromstring(z.read("SystemStructure.ssd"))
        sysel = root.find("ssd:System", NS)
        if sysel is None:
            raise ConnectionError_(f"{path}: SystemStructure.ssd has no ssd:System")
        cs = CoSystem()
        starts = {}
        for comp in sysel.findall("ssd:Elements/ssd:Component", NS):
            unit, source = comp.get("name"), comp.get("source") or ""
            if comp.get("type", FMU_TYPE) != FMU_TYPE or source not in names:
                raise ConnectionError_(f"{path}: component {unit!r} is not an FMU of the package ({source!r})")
            target = unpack_dir / source
            if not target.is_file():
                z.extract(source, unpack_dir)
            kinds = {c.get("name"): c.get("kind") for c in comp.findall("ssd:Connectors/ssd:Connector", NS)}
            params, inputs = {}, {}
            for b in comp.findall("ssd:ParameterBindings/ssd:ParameterBinding", NS):
                sets = b.findall("ssd:ParameterValues/ssv:ParameterSet", NS)
                if b.get("source"):
                    sets.append(fromstring(z.read(b.get("source"))))
                for ps in sets:
                    for p in ps.findall("ssv:Parameters/ssv:Parameter", NS):
                        v = p.find("ssv:Real", NS)
                        value = float(v.get("value")) if v is not None else \
                            int(p.find("ssv:Integer", NS).get("value"))
                        (inputs if kinds.get(p.get("name")) == "input" else params)[p.get("name")] = value
            cs.add(unit, str(target), params)
            starts.update({f"{unit}.{k}": v for k, v in inputs.items()})
        for c in sysel.findall("ssd:Connections/ssd:Connection", NS):
            a, b = c.get("startElement"), c.get("endElement")
            if not (a and b):
                raise ConnectionError_(f"{path}: connections to the system's own connectors are not supported "
                                       f"({a}.{c.get('startConnector')} -> {b}.{c.get('endConnector')})")
            cs.connect(f"{a}.{c.get('startConnector')}", f"{b}.{c.get('endConnector')}")
        for ref, value in starts.items():
            cs.set_input(ref, value)
        for note in sysel.findall("ssd:Annotations/ssc:Annotation", NS):
            if note.get("type") == RECORD_ANNOTATION:
                cs.record(*(f"{v.get('element')}.{v.get('name')}" for v in note.findall("Recorded/Variable")))
        sim = {}
        exp = root.find("ssd:DefaultExperiment", NS)
        if exp is not None and exp.get("stopTime"):
            sim["stop"] = float(exp.get("stopTime"))
    return SystemFile(cs, path, sim)
