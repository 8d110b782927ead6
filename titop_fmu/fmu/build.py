"""``titop-fmu build``: write the TITOP FMUs (FMI 2.0 co-simulation, Linux x86-64).

Each FMU is a zip with

* ``modelDescription.xml``: pythonfmu's description of the slave, completed by
  :mod:`.model_description` (units, dependencies, initial unknowns), with
  ``providesDirectionalDerivative`` (answered by the entry points, ``shim.c``);
* ``binaries/linux64/<id>.so``: the FMI entry points (``shim.c``, compiled
  once per build with the C compiler ``$CC`` or ``cc``), which load
  ``binaries/linux64/libpythonfmu-export.so``, pythonfmu's library that runs
  the Python slave;
* ``resources/``: the slave module ``<id>.py`` and ``slavemodule.txt``
  (pythonfmu's layout), pythonfmu's Python files and the whole ``titop_fmu``
  package with its C kernel compiled (``titop_fmu/libtitop_kernel.so``, the
  blocks' derivatives and outputs; an FMU never compiles), so the host's
  Python needs numpy only.

The build is deterministic: same sources, same compiler -> same bytes (fixed
zip timestamps, a GUID derived from the content, no generation date).
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sysconfig
import tempfile
from pathlib import Path
from types import SimpleNamespace
from xml.dom.minidom import parseString
from xml.etree.ElementTree import tostring

from ..archive import write_zip
from ..errors import TitopError
from .. import dual
from ..cbuild import CompileError, c_compiler, compile_c
from ..kernel import KERNEL_LIBRARY, KernelUnavailable, cached_kernel
from .catalog import DEFAULT_CHILDREN, all_identifiers, interface
from .model_description import content_guid, finalize, measure_dependencies

PACKAGE_ROOT = Path(__file__).resolve().parents[1]      # titop_fmu/
SHIM_SOURCE = Path(__file__).with_name("shim.c")
#: the FMI 2.0 types, which shim.c shares with the standalone FMUs' C layer
FMI2_TYPES = Path(__file__).with_name("csrc") / "fmi2_types.h"
INNER_LIBRARY = "libpythonfmu-export.so"
MODEL_OPTIONS = {
    "needsExecutionTool": True,          # a Python interpreter with numpy
    "canHandleVariableCommunicationStepSize": True,
    "canInterpolateInputs": False,
    "canBeInstantiatedOnlyOncePerProcess": False,
    "canGetAndSetFMUstate": True,
    "canSerializeFMUstate": True,
}
#: the pythonfmu whose export library the FMUs ship
PYTHONFMU_VERSION = "0.7.0"


class FmuBuildError(TitopError):
    """The FMUs cannot be built here (platform, compiler, pythonfmu)."""


def libpython_soname() -> str:
    """The soname of the shared Python library of this interpreter (``libpython3.11.so.1.0``)."""
    soname = sysconfig.get_config_var("INSTSONAME") or ""
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and ".so" in soname:
        return soname
    abiflags = sysconfig.get_config_var("ABIFLAGS") or ""
    return f"libpython{sysconfig.get_config_var('VERSION')}{abiflags}.so.1.0"


def c_host_env(base=None) -> dict:
    """The environment a C host needs to run the FMUs (``fmus/README.md``): ``base`` (default
    ``os.environ``) without ``PYTHONPATH``/``PYTHONHOME``, this Python's library directory on
    ``LD_LIBRARY_PATH`` when its shared library is there, numpy's site directory on ``PYTHONPATH``."""
    import numpy
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    if os.path.isfile(os.path.join(libdir, libpython_soname())):
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [libdir, env.get("LD_LIBRARY_PATH")]))
    env["PYTHONPATH"] = str(Path(numpy.__file__).resolve().parents[1])
    return env


def _pythonfmu():
    """``(pythonfmu's package folder, its export library)`` of the installed distribution: not
    of ``import pythonfmu``, which in a process that has run a TITOP FMU is the copy in that
    FMU's resources (no library there)."""
    from importlib import metadata
    try:
        dist = metadata.distribution("pythonfmu")
    except metadata.PackageNotFoundError:
        raise FmuBuildError(f"building the FMUs needs pythonfmu (pip install pythonfmu=={PYTHONFMU_VERSION})") from None
    if dist.version != PYTHONFMU_VERSION:
        raise FmuBuildError(
            f"the FMUs are built with pythonfmu {PYTHONFMU_VERSION} (found {dist.version}): the entry points "
            "(shim.c) and the slave work around that version's library (error status, logging, a reference-count "
            f"bug); check them before changing it (pip install pythonfmu=={PYTHONFMU_VERSION})")
    here = Path(dist.locate_file("pythonfmu"))
    lib = here / "resources" / "binaries" / "linux64" / INNER_LIBRARY
    if not lib.is_file():
        raise FmuBuildError(f"pythonfmu {dist.version} has no Linux x86-64 library ({lib.name})")
    return here, lib


def linux_c_compiler(where: str = "") -> str:
    """The C compiler of this Linux x86-64 machine, the one the FMUs are built on; else
    :class:`FmuBuildError` (``where``: what to do elsewhere)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise FmuBuildError(f"the FMUs are built on Linux x86-64 only (this is {platform.system()} "
                            f"{platform.machine()}){where}")
    cc = c_compiler()
    if not cc:
        raise FmuBuildError("building the FMUs needs a C compiler: install one (cc/gcc) or set CC")
    return cc


def compile_shim(dest: Path, source: Path = SHIM_SOURCE) -> Path:
    """Compile the FMI entry points (``shim.c``, or another version of it: ``source``) to ``dest``."""
    cc = linux_c_compiler()
    if not Path(source).is_file():
        raise FmuBuildError(f"{Path(source).name} is missing from the installed titop_fmu.fmu package")
    # -z nodelete: dlclose never unloads the entry points, so the Python interpreter outlives every
    # FMU freed before the process exits (see point 3 of shim.c's header)
    flags = ["-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-Wl,-Bsymbolic", "-Wl,-z,nodelete",
             f'-DTITOP_LIBPYTHON="{libpython_soname()}"', f"-I{FMI2_TYPES.parent}"]
    try:
        return compile_c(Path(source), dest, cc, flags, ["-ldl", "-lpthread"], "the FMU entry points")
    except CompileError as e:
        raise FmuBuildError(str(e)) from None


def _python_files(root: Path, arc_root: str) -> dict:
    """``{archive name: bytes}`` of the ``.py`` files under ``root``."""
    return {f"{arc_root}/{p.relative_to(root).as_posix()}": p.read_bytes()
            for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts}


def slave_module(kind: str, n_children: int, n_modes: int | None = None) -> str:
    iface = interface(kind, n_children, n_modes)
    return (f'"""Entry point of the TITOP FMU {iface.model_identifier} (generated by titop-fmu build)."""\n\n'
            "from titop_fmu.fmu.slave import TitopSlave, pin_module_globals\n\n"
            "pin_module_globals(globals())   # works around a reference-count bug of pythonfmu 0.7\n\n\n"
            f"class {iface.model_identifier}(TitopSlave):\n"
            f'    """{iface.description}."""\n\n'
            f"    KIND = {kind!r}\n"
            f"    CHILDREN = {iface.n_children}\n"
            + ("" if n_modes is None else f"    MODES = {int(n_modes)}\n"))


def describe(slave, iface, on_inputs, on_params, guid_parts=(), experiment=None, options=None,
             extend=None, tool=None) -> bytes:
    """The ``modelDescription.xml`` (bytes, UTF-8) of the FMU whose pythonfmu slave instance is
    ``slave``: pythonfmu's description completed by :func:`.model_description.finalize`
    (``iface``, the measured dependencies, ``experiment``), with a GUID derived from it
    and ``guid_parts``; ``providesDirectionalDerivative`` (which pythonfmu does not know) and
    the vendor function for several seeds as the slave's ``DERIVATIVES`` says; ``options``:
    the capability flags (default :data:`MODEL_OPTIONS`; the standalone FMUs need no
    execution tool, :mod:`.standalone`); ``extend(root)``: completes the description before its GUID is
    derived (Model Exchange, :func:`.model_description.add_model_exchange`); ``tool``: the
    ``generationTool`` (default: titop-fmu with pythonfmu's, which the standalone FMUs do not use)."""
    root = slave.to_xml(MODEL_OPTIONS if options is None else options)
    if slave.DERIVATIVES:
        root.find("CoSimulation").set("providesDirectionalDerivative", "true")
    finalize(root, iface, on_inputs, on_params, experiment, derivatives=slave.DERIVATIVES, tool=tool)
    if extend is not None:
        extend(root)
    root.set("guid", "{00000000-0000-0000-0000-000000000000}")
    text = tostring(root, "UTF-8")
    root.set("guid", content_guid(text, *guid_parts))
    return parseString(tostring(root, "UTF-8")).toprettyxml(indent="  ", encoding="UTF-8")


def model_description(kind: str, n_children: int, guid_parts=(), options=None, tool=None,
                      n_modes: int | None = None) -> bytes:
    """The ``modelDescription.xml`` of one block FMU (bytes, UTF-8; ``n_modes``: the modes of a
    flexible body); ``options`` and ``tool`` as :func:`describe` takes them."""
    from .slave import TitopSlave
    iface = interface(kind, n_children, n_modes)
    cls = type(iface.model_identifier, (TitopSlave,), {"KIND": kind, "CHILDREN": iface.n_children,
                                                       "MODES": iface.n_modes})
    return describe(cls(instance_name="build", resources=None), iface, *block_dependencies(kind, n_children, n_modes),
                    guid_parts=guid_parts, options=options, tool=tool)


@functools.lru_cache(maxsize=None)
def block_dependencies(kind: str, n_children: int, n_modes: int | None = None) -> tuple:
    """The measured dependencies of one block FMU (:func:`.model_description.measure_dependencies`,
    read-only), measured once per process: its pythonfmu and standalone FMUs describe the same
    model, and the measure is seeded (the same matrices every time)."""
    deps = measure_dependencies(interface(kind, n_children, n_modes))
    for d in deps:
        d.setflags(write=False)
    return deps


def validate(path):
    """FMPy's validation of the FMU ``path``: the model description against the schema, unique
    and well-formed variable names (this one needs lark, the ``test`` extra; skipped without
    it), the ``ModelStructure``, start values, units. An :class:`FmuBuildError` lists what is
    wrong."""
    from fmpy import read_model_description
    from fmpy.model_description import ValidationError
    try:
        import lark  # noqa: F401  (FMPy checks the structured names' grammar with it)
        names = True
    except ImportError:
        names = False
    try:
        md = read_model_description(str(path), validate=True, validate_variable_names=False,
                                    validate_model_structure=True)
        problems = _name_problems(md) if names else []
    except ValidationError as e:
        problems = e.problems
    if problems:
        raise FmuBuildError(f"the FMU would be invalid, nothing written: {'; '.join(problems[:3])}"
                            + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""))


#: an array subscript of a structured variable name (``[3]``, ``[1,2]``): whether the name is well
#: formed does not depend on its unsigned integers
_SUBSCRIPT = re.compile(r"\[[0-9]+(?:,[0-9]+)*\]")


def _name_problems(md) -> list:
    """FMPy's check of the variable names against the grammar of structured names, on one name
    of each shape (the name with its array subscripts as ``[0]``): FMPy parses each name with
    lark's Earley parser, 17 ms a name, 53 s of the 68 s export of a beam of 3131 variables."""
    try:
        from fmpy.validation import _validate_variable_names
    except ImportError:                         # an FMPy without it: its check of every name
        from fmpy.validation import validate_model_description
        return validate_model_description(md, validate_variable_names=True)
    shapes = {}
    for v in md.modelVariables:
        shapes.setdefault(_SUBSCRIPT.sub("[0]", v.name), v)
    return _validate_variable_names(SimpleNamespace(variableNamingConvention=md.variableNamingConvention,
                                                    modelVariables=list(shapes.values())))


def package_fmu(out: Path, model_id: str, slave_source: str, description, shim: Path, common: dict,
                resources: dict | None = None, check=None) -> Path:
    """Write the FMU ``out``: the ``common`` files, the slave module ``slave_source`` of the
    class ``model_id``, the entry points ``shim``, the extra ``resources``
    (``{name under resources/: bytes}``) and ``description(guid_parts)``, its model
    description, the GUID depending on every resource; ``check(path)`` may refuse it
    (:func:`validate`), nothing is written then."""
    files = dict(common)
    files.update({f"resources/{k}": v for k, v in (resources or {}).items()})
    files[f"resources/{model_id}.py"] = slave_source.encode()
    files["resources/slavemodule.txt"] = model_id.encode()
    files[f"binaries/linux64/{model_id}.so"] = Path(shim).read_bytes()
    resources = sorted((k, v) for k, v in files.items() if k.startswith("resources/"))
    files["modelDescription.xml"] = description([k.encode() + v for k, v in resources])
    out = Path(out)
    write_zip(out, files, check)
    return out


def build_fmu(kind: str, n_children: int, out_dir, shim: Path, common: dict | None = None,
              n_modes: int | None = None) -> Path:
    """Write ``<out_dir>/<model id>.fmu``; ``shim`` is the compiled entry points,
    ``common`` the files every FMU shares (see :func:`common_files`); ``n_modes``: the modes of
    a flexible body (``<kind>_c<n>_f<n_modes>``, docs/flexible-bodies.md)."""
    mid = interface(kind, n_children, n_modes).model_identifier
    return package_fmu(Path(out_dir) / f"{mid}.fmu", mid, slave_module(kind, n_children, n_modes),
                       lambda parts: model_description(kind, n_children, guid_parts=parts, n_modes=n_modes), shim,
                       common_files() if common is None else common)


def common_files() -> dict:
    """The files every FMU shares: pythonfmu's library and Python files, the titop_fmu package
    and its C kernel (``resources/titop_fmu/kernel.so``) and forward-mode kernel, from the cache of
    compiled libraries (:func:`~titop_fmu.cbuild.cached_build`): the same bytes as a fresh compile."""
    pfmu_dir, inner = _pythonfmu()
    files = {f"binaries/linux64/{INNER_LIBRARY}": inner.read_bytes()}
    files.update({f"resources/pythonfmu/{p.name}": p.read_bytes() for p in sorted(pfmu_dir.glob("*.py"))})
    files.update(_python_files(PACKAGE_ROOT, "resources/titop_fmu"))
    cc = c_compiler() or "cc"
    try:                        # compiled once into the cache, as this process runs them
        files[f"resources/titop_fmu/{KERNEL_LIBRARY}"] = cached_kernel(cc).read_bytes()
    except KernelUnavailable as e:
        raise FmuBuildError(f"building the FMUs: {e}") from None
    try:                        # the FMUs' derivatives w.r.t. their states: without a C++ compiler, none
        files[f"resources/titop_fmu/{dual.DUAL_LIBRARY}"] = dual.cached_library(cc).read_bytes()
    except KernelUnavailable:
        pass
    return files


def build_all(out_dir="fmus", children=DEFAULT_CHILDREN, log=None, flexible=()) -> list:
    """Build every FMU kind for each child-port count in ``children`` into ``out_dir``, and the
    flexible variants ``flexible`` (``[(kind, n_children, n_modes)]``: ``welded_c1_f10``, the
    number of modes fixed at build time); ``log(path)`` is called as each one is written."""
    out_dir = Path(out_dir)
    children = sorted(set(int(n) for n in children))
    if any(n < 0 for n in children):
        raise FmuBuildError(f"child-port counts must be >= 0, got {children}")
    out_dir.mkdir(parents=True, exist_ok=True)
    common = common_files()
    with tempfile.TemporaryDirectory(prefix="titop_build_") as tmp:
        shim = compile_shim(Path(tmp) / "shim.so")
        paths = []
        for kind, n, *modes in [*all_identifiers(children), *flexible]:
            paths.append(build_fmu(kind, n, out_dir, shim, common, *modes))
            if log is not None:
                log(paths[-1])
        return paths
