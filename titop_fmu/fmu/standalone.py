"""``titop-fmu build --standalone``: the TITOP block FMUs with binaries in C only.

The same FMUs as :mod:`.build` (the same model description but for
``needsExecutionTool="false"``: variables, exposed states, value references, units, structure,
vendor functions), whose binaries are the blocks' C kernel (``titop_fmu/kernel.c``) and an FMI
2.0 co-simulation layer in C (``csrc/``: ``fmi2.c`` over the model interface ``model.h``, which
``tree.c`` implements on the kernel's tree, a flexible body's data computed from its modal
parameters and checked by ``flexible_body.c``; ``format.c``, Python's float repr for the
messages), with the forward-mode kernel (``titop_fmu/kernel_dual.cpp``: C++ with no exception,
no RTTI, no static guard, nothing of the C++ library, linked by the C compiler driver) for the
exact derivatives with respect to the states. No Python, no numpy, no library beyond libc and
libm at run time.

Each FMU's data is a C table (``model.c``, :func:`model_table`): its variables, its blocks
(kind, topology, where their parameters and inputs are), which inputs are twist/pose level
and which outputs Euler angles, the DOPRI5 tableau of :mod:`titop_fmu.integrators`. The
sources are compiled once per platform, then each FMU's table is compiled and linked with
them. An FMU holds

* ``modelDescription.xml``;
* ``binaries/linux64/<id>.so``, always; ``binaries/win64/<id>.dll`` when the MinGW-w64 cross
  compiler (``x86_64-w64-mingw32-gcc``, or ``$TITOP_FMU_MINGW``) is present;
* ``sources/``: the C files, to compile the binary of another platform (fmus/README.md).

The build is deterministic: same sources and compilers, same bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ..archive import write_zip
from ..blocks import FlexibleBody
from ..integrators import MAX_STEPS, _A, _C, _E
from ..dual import SOURCE as DUAL_SOURCE
from ..cbuild import CompileError, cache_root, run_compiler
from ..kernel import HEADERS, SOURCE as KERNEL_SOURCE, TYPES, _extra
from .build import MODEL_OPTIONS, FmuBuildError, linux_c_compiler, model_description
from .catalog import DEFAULT_CHILDREN, all_identifiers, interface

CSRC = Path(__file__).with_name("csrc")
#: the C sources of every standalone FMU, and the one each FMU has of its own
SOURCES = ("fmi2_types.h", "model.h", "fmi2.c", "tree.c", "flexible_body.c", "control.c", "format.c")
TABLE = "model.c"
#: the capability flags: those of the pythonfmu FMUs, with no execution tool
OPTIONS = dict(MODEL_OPTIONS, needsExecutionTool=False)
#: the ``generationTool`` of the model description (C only: no PythonFMU in them)
TOOL = "titop-fmu (standalone FMU: C only)"
#: the parameter fields of model.h (TITOP_P_*), by catalog parameter name
FIELDS = ("mass", "inertia", "com", "c1.r", "gravity", "mount", "r0", "Theta0", "twist0", "ext_frame", "axis",
          "q0", "qd0", "k", "d", "K", "D")
#: a flexible body's parameter fields (model.h: TITOP_F_*, TITOP_N_*; fmu/flexible.py's names)
FLEX_FIELDS = ("mass", "L", "omega", "zeta", "I_phi_x0", "I_phi_phi", "K0t", "K0r", "K0om", "stiffening", "eta0",
               "etad0")
NODE_FIELDS = ("r", "phi", "psi", "K0F", "K0M")
#: the quantities of TitopOutput (model.h), by the name titop_fmu.titop.records gives them
OUTPUT_QUANTITIES = {None: 0, "position": 1, "velocity": 2, "dcm": 3, "euler": 4}
#: a closed loop's value (TitopOutput's TITOP_VALUE: a control unit's output)
TITOP_VALUE = 5
#: (folder under binaries/, file suffix, extra compiler flags, extra link flags)
PLATFORMS = {
    "linux64": (".so", ["-fPIC", "-fvisibility=hidden"], ["-Wl,-Bsymbolic", "-s"]),
    # MinGW: its own C99 printf family (linked in: the DLL still needs only msvcrt and
    # KERNEL32), no libgcc DLL, no time stamp in the binary
    "win64": (".dll", ["-D__USE_MINGW_ANSI_STDIO=1"], ["-static-libgcc", "-Wl,--no-insert-timestamp", "-s"]),
}
CFLAGS = ["-O2", "-std=c99"]
#: the forward-mode kernel's (C++ through the C compiler driver; dual.FLAGS without -shared)
CXXFLAGS = ["-O2", "-x", "c++", "-std=c++11", "-fno-exceptions", "-fno-rtti", "-fno-threadsafe-statics"]


def mingw_compiler():
    """The MinGW-w64 cross compiler (``$TITOP_FMU_MINGW``, else ``x86_64-w64-mingw32-gcc`` on
    the path with its C++ front end, ``x86_64-w64-mingw32-g++``), or None."""
    env = os.environ.get("TITOP_FMU_MINGW")
    if env:
        return env
    cc = shutil.which("x86_64-w64-mingw32-gcc")
    return cc if cc and shutil.which("x86_64-w64-mingw32-g++") else None


def compilers() -> dict:
    """``{platform: C compiler}`` of the platforms the FMUs can be built for here (linux64 needs
    the C compiler of this Linux x86-64 machine; :class:`FmuBuildError` without it)."""
    out = {"linux64": linux_c_compiler("; fmus/README.md says how to compile the sources elsewhere")}
    if mingw_compiler():
        out["win64"] = mingw_compiler()
    return out


def source_files() -> dict:
    """``{file name: bytes}`` of the C sources every standalone FMU is compiled from."""
    files = {name: (CSRC / name).read_bytes() for name in SOURCES}
    files["kernel.c"] = KERNEL_SOURCE.read_bytes()
    files.update({h.name: h.read_bytes() for h in HEADERS})
    files["kernel_dual.cpp"] = DUAL_SOURCE.read_bytes()
    return files


# -- the table ---------------------------------------------------------------------------------

def _c_string(s: str) -> str:
    assert all(32 <= ord(ch) < 127 and ch not in '"\\' for ch in s), s
    return f'"{s}"'


def _c_doubles(values) -> str:
    return "{" + ", ".join(repr(float(v)) for v in values) + "}"


def _c_ints(values) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def first_scalars(iface) -> dict:
    """``{parameter name: value reference of its first scalar}`` of an FMU's interface."""
    first = {}
    for vr, (_name, p, *_rest) in enumerate(iface.param_scalars):
        first.setdefault(iface.params[p].name, vr)
    return first


def block_spec(block, state: int, inputs: dict, first, parents=None, children=None, unit=None) -> str:
    """The C initialiser of the ``TitopBlockSpec`` (model.h) of ``block`` (a block of
    :mod:`titop_fmu.blocks`) whose states begin at ``state``: per parent port its linked parent
    ``(index, child slot)`` or None, per child port the index of the linked block or None
    (``parents``, ``children``; default: none linked); ``inputs`` ``{input name: position}`` of its
    free inputs (those not linked); ``first(name)`` the value reference of the first scalar of the
    parameter ``name``, or None; ``unit`` its unit in an assembly (its messages name it)."""
    parents = parents or [None] * len(block.parent_ports)
    children = children or [None] * len(block.child_ports)
    ports = [(*link, -1) if link else (-1, -1, inputs[f"{p}.m"]) for p, link in zip(block.parent_ports, parents)]
    (parent, slot, m_in), (parent_r, slot_r, m_in_r) = ports + [(-1, -1, -1)] * (2 - len(ports))
    child = [k if k is not None else -1 - inputs[f"{c}.w"] for c, k in zip(block.child_ports, children)]
    ext, tau = _extra(block, inputs.get)
    par = [first(f) for f in FIELDS]
    body = getattr(block, "body", None)
    modes, flex = (body.n_modes, f"(const int[]){_c_ints(flexible_fields(first, len(block.child_ports)))}") \
        if isinstance(body, FlexibleBody) else (-1, "NULL")
    return (f"{{{TYPES[type(block)]}, {int(getattr(block, 'mode', '') == 'inverse')}, {len(block.child_ports)}, "
            f"{parent}, {slot}, {parent_r}, {slot_r}, {m_in}, {m_in_r}, (const int[]){_c_ints(child + [0])}, "
            f"{-1 if ext is None else ext}, {-1 if tau is None else tau}, {state}, "
            f"{_c_ints(-1 if v is None else v for v in par)}, {'NULL' if unit is None else _c_string(unit)}, "
            f"{modes}, {flex}}}")


def flexible_fields(first, n_children: int) -> list:
    """The value references of a flexible body's parameter fields (model.h: TITOP_F_*, then
    TITOP_N_* per child port), ``first(name)`` giving a parameter's first scalar."""
    return [first(f"flex.{f}") for f in FLEX_FIELDS] + \
        [first(f"c{i}.{f}") for i in range(1, n_children + 1) for f in NODE_FIELDS]


def c_table(model_id: str, guid: str, description: str, variables, n_params: int, n_inputs: int, n_outputs: int,
            blocks, n_states: int, tolerances, check_order=None, n_kernel_outputs=None, outputs=None,
            state_level=(), angle=(), derivatives=True, model_exchange=False, loop=None) -> str:
    """The C table (``model.c``) of a standalone FMU: its ``TitopModelSpec`` (model.h).
    ``variables``: ``(name, type, causality, start)`` in value-reference order (a type or
    causality by its first letter); ``blocks``: the :func:`block_spec` s, parents first;
    ``tolerances``: the value references of ``rtol`` and ``atol`` (None: no states);
    ``check_order``: the blocks in the order their parameters are checked (default theirs);
    ``outputs``: per output its ``TitopOutput`` (model.h) ``(quantity, source, block, point[, node])``,
    ``(0, position in the kernel's outputs, -1, -1)`` for one of the kernel's outputs
    (``n_kernel_outputs`` of them; default: the outputs are the kernel's); ``state_level``,
    ``angle``: the positions of the twist/pose inputs and of the Euler-angle outputs
    (directional derivatives); ``loop``: ``(C definitions, C initializer)`` of a closed loop's
    ``TitopLoop`` (:mod:`titop_fmu.titop.loop_table`)."""
    n_kernel_outputs = n_outputs if n_kernel_outputs is None else n_kernel_outputs
    outputs = [(0, k, -1, -1) for k in range(n_outputs)] if outputs is None else outputs
    check_order = range(len(blocks)) if check_order is None else check_order
    rtol, atol = (-1, -1) if tolerances is None else tolerances
    table = ",\n    ".join(f"{{{_c_string(name)}, '{typ[0]}', '{causality[0]}', "
                            f"{repr(float(start)) if start is not None else '0.0'}}}"
                            for name, typ, causality, start in variables)
    level = [0] * n_inputs
    for i in state_level:
        level[i] = 1
    angles = [0] * n_outputs
    for i in angle:
        angles[i] = 1
    n_blocks, blocks = len(blocks), ",\n    ".join(blocks)
    definitions, initializer = loop if loop is not None else ("", None)
    if initializer is not None:
        definitions += f"\nstatic const TitopLoop loop = {initializer};\n"
    return f"""/* The standalone TITOP FMU {model_id} (generated by titop-fmu):
 * {description}. */

#include "model.h"
{definitions}
static const TitopVariable variables[] = {{
    {table}
}};

static const TitopBlockSpec blocks[] = {{
    {blocks}
}};

static const int check_order[] = {_c_ints(list(check_order))};
static const TitopOutput outputs[] = {{{", ".join(_c_ints(o) for o in outputs) or "{0}"}}};
static const signed char state_level[] = {_c_ints(level + [0])};
static const signed char angle[] = {_c_ints(angles + [0])};
static const double tableau_a[] = {_c_doubles(_A.ravel())};
static const double tableau_e[] = {_c_doubles(_E)};
static const double tableau_c[] = {_c_doubles(_C)};

const TitopModelSpec titop_model_spec = {{
    {_c_string(model_id)}, {_c_string(guid)},
    {len(variables)}, variables,
    {n_params}, {n_inputs}, {n_outputs},
    {n_blocks}, blocks, check_order,
    {n_kernel_outputs}, outputs,
    {n_states},
    {rtol}, {atol},
    state_level, angle,
    tableau_a, tableau_e, {MAX_STEPS},
    {int(derivatives)}, {int(model_exchange)},
    tableau_c, {"NULL" if initializer is None else "&loop"}
}};
"""


def model_table(kind: str, n_children: int, guid: str, n_modes: int | None = None) -> str:
    """The C table (``model.c``) of the block FMU ``kind`` with ``n_children`` child ports (and a
    flexible body of ``n_modes`` modes): a tree of one block, its inputs the block's own, read
    from the catalog's interface and the unit the FMU wraps (:class:`~titop_fmu.unit.BlockUnit`)."""
    iface = interface(kind, n_children, n_modes)
    unit, _ = iface.make_unit(iface.defaults())
    first = first_scalars(iface)
    block = block_spec(unit.block, 0, {n: s.start for n, s in unit._in_slices.items()}, first.get)
    return c_table(iface.model_identifier, guid, iface.description,
                   [(v.name, v.type, v.causality, v.start) for v in iface.variables], iface.n_params,
                   len(iface.input_names), len(iface.output_names), [block], unit.block.n_states,
                   (first["rtol"], first["atol"]) if "rtol" in first else None,
                   state_level=unit._state_level_inputs, angle=unit._angle_outputs)


# -- compiling -----------------------------------------------------------------------------------

def _keep(folder: Path, objects, kept: Path):
    """Copy ``objects`` from ``folder`` into the cache folder ``kept``, whole or not at all
    (a folder moved in place: concurrent builds agree; an unwritable cache is no error)."""
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="titop_objects_", dir=kept.parent)
    except OSError:
        return
    try:
        for o in objects:
            shutil.copyfile(folder / o, Path(tmp) / o)
        os.replace(tmp, kept)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(cmd, cwd, what):
    try:
        run_compiler(cmd, cwd, what)
    except CompileError as e:
        raise FmuBuildError(str(e)) from None


class Compiler:
    """The standalone sources compiled once per platform in a folder of its own (no path of
    this machine enters a binary), then linked with each FMU's table. The objects are kept in
    the cache, keyed by the sources, the compiler and the flags: a later build or export links
    them again instead of compiling (about 7 of an export's 12 s)."""

    OBJECTS = ("fmi2", "tree", "control", "format")

    def __init__(self, folder: Path, platforms: dict):
        self.folder, self.platforms = Path(folder), platforms
        sources = source_files()
        for platform, cc in platforms.items():
            _suffix, cflags, _lflags = PLATFORMS[platform]
            d = self.folder / platform
            d.mkdir()
            for name, data in sources.items():
                (d / name).write_bytes(data)
            key = hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(sources.items()))
                                 + " ".join([cc, *CFLAGS, *CXXFLAGS, *cflags]).encode()).hexdigest()[:16]
            kept = cache_root() / f"standalone-{platform}-{key}"
            objects = [f"{o}.o" for o in (*self.OBJECTS, "kernel_dual")]
            if all((kept / o).is_file() for o in objects):
                for o in objects:
                    shutil.copyfile(kept / o, d / o)
                continue
            _run([*cc.split(), *CFLAGS, *cflags, "-c", *(f"{o}.c" for o in self.OBJECTS)], d,
                 f"the standalone FMU sources for {platform}")
            _run([*cc.split(), *CXXFLAGS, *cflags, "-c", "kernel_dual.cpp"], d,
                 f"the forward-mode kernel for {platform} (C++: needs the C++ front end, g++)")
            _keep(d, objects, kept)

    def binaries(self, model_id: str, table: str) -> dict:
        """``{archive name: bytes}`` of the FMU ``model_id``'s binaries, one per platform."""
        out = {}
        for platform, cc in self.platforms.items():
            suffix, cflags, lflags = PLATFORMS[platform]
            d = self.folder / platform
            (d / TABLE).write_text(table)
            _run([*cc.split(), *CFLAGS, *cflags, "-shared", *lflags, "-o", f"out{suffix}", TABLE,
                  *(f"{o}.o" for o in (*self.OBJECTS, "kernel_dual")), "-lm"], d, f"{model_id} for {platform}")
            out[f"binaries/{platform}/{model_id}{suffix}"] = (d / f"out{suffix}").read_bytes()
        return out


def package(out: Path, model_id: str, description, table, compiler: Compiler, check=None) -> Path:
    """Write the standalone FMU ``out``: ``description(guid_parts)``, its model description (the
    GUID depending on the sources), ``table(guid)``, its C table, compiled by ``compiler``;
    ``check(path)`` may refuse it (:func:`.build.validate`), nothing is written then."""
    sources = source_files()
    text = description([k.encode() + v for k, v in sorted(sources.items())])
    guid = text.split(b'guid="', 1)[1].split(b'"', 1)[0].decode()
    code = table(guid)
    files = {"modelDescription.xml": text, f"sources/{TABLE}": code.encode()}
    files.update({f"sources/{k}": v for k, v in sources.items()})
    files.update(compiler.binaries(model_id, code))
    return write_zip(Path(out), files, check)


def build_fmu(kind: str, n_children: int, out_dir, compiler: Compiler, n_modes: int | None = None) -> Path:
    """Write the standalone ``<out_dir>/<model id>.fmu`` (``n_modes``: the modes of a flexible
    body, ``<kind>_c<n>_f<n_modes>``, its modal data FMI parameters)."""
    mid = interface(kind, n_children, n_modes).model_identifier
    return package(Path(out_dir) / f"{mid}.fmu", mid,
                   lambda parts: model_description(kind, n_children, guid_parts=parts, options=OPTIONS, tool=TOOL,
                                                   n_modes=n_modes),
                   lambda guid: model_table(kind, n_children, guid, n_modes), compiler)


def build_all(out_dir="fmus", children=DEFAULT_CHILDREN, log=None, flexible=()) -> list:
    """Build every standalone FMU kind for each child-port count in ``children`` into
    ``out_dir``, and the flexible variants ``flexible`` (``[(kind, n_children, n_modes)]``), as
    :func:`.build.build_all` does the pythonfmu ones."""
    out_dir = Path(out_dir)
    children = sorted(set(int(n) for n in children))
    if any(n < 0 for n in children):
        raise FmuBuildError(f"child-port counts must be >= 0, got {children}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="titop_standalone_") as tmp:
        compiler = Compiler(Path(tmp), compilers())
        paths = []
        for kind, n, *modes in [*all_identifiers(children), *flexible]:
            paths.append(build_fmu(kind, n, out_dir, compiler, *modes))
            if log is not None:
                log(paths[-1])
        return paths
