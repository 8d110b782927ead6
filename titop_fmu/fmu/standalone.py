"""``titop-fmu build --standalone``: the TITOP block FMUs with binaries in C only.

The same FMUs as :mod:`.build` (the same model description but for
``needsExecutionTool="false"`` and the continuous states, which these do not expose: variables,
value references, units, structure, vendor functions), whose binaries are the blocks' C kernel (``titop_fmu/kernel.c``) and an FMI 2.0
co-simulation layer in C (``csrc/``: ``fmi2.c`` over the model interface ``model.h``, which
``tree.c`` implements on the kernel's tree; ``format.c``, Python's float repr for the
messages). No Python, no numpy, no library beyond libc and libm at run time.

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

import os
import shutil
import tempfile
from pathlib import Path

from ..archive import write_zip
from ..integrators import MAX_STEPS, _A, _E
from ..kernel import SOURCE as KERNEL_SOURCE, TYPES, CompileError, _extra, run_compiler
from .build import MODEL_OPTIONS, FmuBuildError, linux_c_compiler, model_description
from .catalog import DEFAULT_CHILDREN, all_identifiers, interface
from .model_description import exposed_variables

CSRC = Path(__file__).with_name("csrc")
#: the C sources of every standalone FMU, and the one each FMU has of its own
SOURCES = ("fmi2_types.h", "model.h", "fmi2.c", "tree.c", "format.c")
TABLE = "model.c"
#: the capability flags: those of the pythonfmu FMUs, with no execution tool
OPTIONS = dict(MODEL_OPTIONS, needsExecutionTool=False)
#: the parameter fields of model.h (TITOP_P_*), by catalog parameter name
FIELDS = ("mass", "inertia", "com", "c1.r", "gravity", "mount", "r0", "Theta0", "twist0", "ext_frame", "axis",
          "q0", "qd0", "k", "d", "K", "D")
#: (folder under binaries/, file suffix, extra compiler flags, extra link flags)
PLATFORMS = {
    "linux64": (".so", ["-fPIC", "-fvisibility=hidden"], ["-Wl,-Bsymbolic", "-s"]),
    # MinGW: its own C99 printf family (linked in: the DLL still needs only msvcrt and
    # KERNEL32), no libgcc DLL, no time stamp in the binary
    "win64": (".dll", ["-D__USE_MINGW_ANSI_STDIO=1"], ["-static-libgcc", "-Wl,--no-insert-timestamp", "-s"]),
}
CFLAGS = ["-O2", "-std=c99"]


def mingw_compiler():
    """The MinGW-w64 cross compiler (``$TITOP_FMU_MINGW``, else ``x86_64-w64-mingw32-gcc`` on
    the path), or None."""
    return os.environ.get("TITOP_FMU_MINGW") or shutil.which("x86_64-w64-mingw32-gcc")


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
    return files


# -- the table ---------------------------------------------------------------------------------

def _c_string(s: str) -> str:
    assert all(32 <= ord(ch) < 127 and ch not in '"\\' for ch in s), s
    return f'"{s}"'


def _c_doubles(values) -> str:
    return "{" + ", ".join(repr(float(v)) for v in values) + "}"


def _c_ints(values) -> str:
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def model_table(kind: str, n_children: int, guid: str) -> str:
    """The C table (``model.c``) of the block FMU ``kind`` with ``n_children`` child ports: a
    tree of one block, its inputs the block's own, read from the catalog's interface and the
    unit the FMU wraps (:class:`~titop_fmu.unit.BlockUnit`)."""
    iface = interface(kind, n_children)
    unit, _ = iface.make_unit(iface.defaults())
    block, slices = unit.block, unit._in_slices
    first = {}                                    # parameter name -> value reference of its first scalar
    for vr, (name, p, *_rest) in enumerate(iface.param_scalars):
        first.setdefault(iface.params[p].name, vr)
    par = [first.get(f, -1) for f in FIELDS]
    ports = [slices[f"{p}.m"].start for p in block.parent_ports] + [-1, -1]
    ext, tau = _extra(block, lambda name: slices[name].start if name in slices else None)
    children = [-1 - slices[f"{c}.w"].start for c in block.child_ports]
    exposed = exposed_variables(iface, states=False)             # no state exposed (a linearization's)
    variables = ",\n    ".join(
        f"{{{_c_string(v.name)}, '{v.type[0]}', '{v.causality[0]}', "
        f"{repr(float(v.start)) if v.start is not None else '0.0'}}}" for v in exposed)
    state_level = [0] * len(iface.input_names)
    for i in unit._state_level_inputs:
        state_level[i] = 1
    angle = [0] * len(iface.output_names)
    for i in unit._angle_outputs:
        angle[i] = 1
    inverse = int(getattr(block, "mode", "") == "inverse")
    return f"""/* The standalone TITOP FMU {iface.model_identifier} (generated by titop-fmu build --standalone):
 * {iface.description}. */

#include "model.h"

static const TitopVariable variables[] = {{
    {variables}
}};

static const int children[] = {_c_ints(children + [0])};
static const TitopBlockSpec blocks[] = {{
    {{{TYPES[type(block)]}, {inverse}, {len(block.child_ports)}, -1, -1, -1, -1, {ports[0]}, {ports[1]}, \
children, {-1 if ext is None else ext}, {-1 if tau is None else tau}, 0, {_c_ints(par)}}}
}};

static const signed char state_level[] = {_c_ints(state_level + [0])};
static const signed char angle[] = {_c_ints(angle + [0])};
static const double tableau_a[] = {_c_doubles(_A.ravel())};
static const double tableau_e[] = {_c_doubles(_E)};

const TitopModelSpec titop_model_spec = {{
    {_c_string(iface.model_identifier)}, {_c_string(guid)},
    {len(exposed)}, variables,
    {iface.n_params}, {len(iface.input_names)}, {len(iface.output_names)},
    1, blocks, {block.n_states},
    {first.get("rtol", -1)}, {first.get("atol", -1)},
    state_level, angle,
    tableau_a, tableau_e, {MAX_STEPS}
}};
"""


# -- compiling -----------------------------------------------------------------------------------

def _run(cmd, cwd, what):
    try:
        run_compiler(cmd, cwd, what)
    except CompileError as e:
        raise FmuBuildError(str(e)) from None


class Compiler:
    """The standalone sources compiled once per platform in a folder of its own (no path of
    this machine enters a binary), then linked with each FMU's table."""

    OBJECTS = ("fmi2", "tree", "format")

    def __init__(self, folder: Path, platforms: dict):
        self.folder, self.platforms = Path(folder), platforms
        for platform, cc in platforms.items():
            _suffix, cflags, _lflags = PLATFORMS[platform]
            d = self.folder / platform
            d.mkdir()
            for name, data in source_files().items():
                (d / name).write_bytes(data)
            _run([*cc.split(), *CFLAGS, *cflags, "-c", *(f"{o}.c" for o in self.OBJECTS)], d,
                 f"the standalone FMU sources for {platform}")

    def binaries(self, model_id: str, table: str) -> dict:
        """``{archive name: bytes}`` of the FMU ``model_id``'s binaries, one per platform."""
        out = {}
        for platform, cc in self.platforms.items():
            suffix, cflags, lflags = PLATFORMS[platform]
            d = self.folder / platform
            (d / TABLE).write_text(table)
            _run([*cc.split(), *CFLAGS, *cflags, "-shared", *lflags, "-o", f"out{suffix}", TABLE,
                  *(f"{o}.o" for o in self.OBJECTS), "-lm"], d, f"{model_id} for {platform}")
            out[f"binaries/{platform}/{model_id}{suffix}"] = (d / f"out{suffix}").read_bytes()
        return out


def build_fmu(kind: str, n_children: int, out_dir, compiler: Compiler) -> Path:
    """Write the standalone ``<out_dir>/<model id>.fmu``."""
    iface = interface(kind, n_children)
    mid = iface.model_identifier
    sources = source_files()
    description = model_description(kind, n_children, guid_parts=[k.encode() + v for k, v in sorted(sources.items())],
                                    options=OPTIONS, states=False)
    guid = description.split(b'guid="', 1)[1].split(b'"', 1)[0].decode()
    table = model_table(kind, n_children, guid)
    files = {"modelDescription.xml": description, f"sources/{TABLE}": table.encode()}
    files.update({f"sources/{k}": v for k, v in sources.items()})
    files.update(compiler.binaries(mid, table))
    return write_zip(Path(out_dir) / f"{mid}.fmu", files)


def build_all(out_dir="fmus", children=DEFAULT_CHILDREN, log=None) -> list:
    """Build every standalone FMU kind for each child-port count in ``children`` into
    ``out_dir`` (as :func:`.build.build_all` does the pythonfmu ones)."""
    out_dir = Path(out_dir)
    children = sorted(set(int(n) for n in children))
    if any(n < 0 for n in children):
        raise FmuBuildError(f"child-port counts must be >= 0, got {children}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="titop_standalone_") as tmp:
        compiler = Compiler(Path(tmp), compilers())
        paths = []
        for kind, n in all_identifiers(children):
            paths.append(build_fmu(kind, n, out_dir, compiler))
            if log is not None:
                log(paths[-1])
        return paths
