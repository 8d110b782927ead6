"""No sequence of FMI calls crashes a standalone FMU: its FMI API fuzzed (``tests/fmu/c/fmu_fuzz.c``).

Random call sequences in any mode, bad value references, NaN, infinite and huge values, NULL
arrays, wrong counts, FMU states got, set, serialized and read back as they are or corrupted
(the mode or has_unit of the blob changed, a byte flipped, a double made NaN, cut short). The FMU's
C sources (``sources/`` of the FMU) are compiled with AddressSanitizer and
UndefinedBehaviorSanitizer (``-fsanitize=address,undefined``, every report fatal, leaks
included): a crash, an access out of bounds, a use after free, a leak, undefined behaviour or a
call that hangs fails the run, so does a failed call that changes the instance or a message whose
category does not fit its status. Block FMUs of every kind, a flexible one, assemblies with
Model Exchange, and the shipped binaries under valgrind: long acceptance runs, all ``pytest
--slow`` (plain ``pytest`` keeps the FMUs' own checks of bad calls and state blobs,
tests/fmu/test_standalone.py and test_fmus.py).

A failure prints the sequence; ``fmu_fuzz ... -f INDEX -s 1 -v`` replays it call by call.
"""

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from fmu_fixtures import compile_c  # noqa: F401  (skips the module without FMPy)
from lone_closure import LONE_CLOSURE
from titop_fmu.cbuild import c_compiler

from fmpy import read_model_description  # noqa: E402

FUZZ = Path(__file__).with_name("c") / "fmu_fuzz.c"
ROOT = Path(__file__).resolve().parents[2]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O0"]
#: a sanitizer's report ends the run with an abort, which the fuzzer's handler says in which
#: sequence and call it came (leaks are checked at the exit)
SANITIZER_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=1", "UBSAN_OPTIONS": "print_stacktrace=1:abort_on_error=1"}


def _compile(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode and "asan" in r.stderr.lower():
        pytest.skip(f"the C compiler has no AddressSanitizer here: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory):
    """``library(fmu) -> path``: the standalone FMU's C sources compiled with the sanitizers into
    a shared library, the sources all FMUs share compiled once; and the fuzzer, also sanitized."""
    from titop_fmu.fmu.standalone import Compiler, source_files
    cc = c_compiler()
    if not cc or not shutil.which("g++"):
        pytest.skip("no C compiler with its C++ front end (cc, g++) to build the sanitized FMUs")
    d = tmp_path_factory.mktemp("sanitized")
    for name, data in source_files().items():
        (d / name).write_bytes(data)
    common = ["-fPIC", "-std=c99", "-c"]
    _compile([*cc.split(), *SANITIZE, *common, *(f"{o}.c" for o in Compiler.OBJECTS)], d)
    _compile([*cc.split(), *SANITIZE, "-fPIC", "-x", "c++", "-std=c++11", "-fno-exceptions", "-fno-rtti",
              "-fno-threadsafe-statics", "-c", "kernel_dual.cpp"], d)
    _compile([*cc.split(), *SANITIZE, f"-I{FUZZ.parent}", "-o", "fmu_fuzz", str(FUZZ), "-ldl", "-lm"], d)

    def library(fmu: Path) -> Path:
        own = d / fmu.stem
        own.mkdir(exist_ok=True)
        with zipfile.ZipFile(fmu) as z:
            (own / "model.c").write_bytes(z.read("sources/model.c"))
        _compile([*cc.split(), *SANITIZE, "-fPIC", "-std=c99", f"-I{d}", "-shared", "-o", "fmu.so", "model.c",
                  *(str(d / f"{o}.o") for o in (*Compiler.OBJECTS, "kernel_dual")), "-lm"], own)
        return own / "fmu.so"
    library.fuzzer = d / "fmu_fuzz"
    return library


@pytest.fixture(scope="module")
def block_fmus(tmp_path_factory):
    """``build(kind, n, modes=None) -> path``: a standalone block FMU (with a flexible body of
    ``modes`` modes; the compiled sources are cached)."""
    from titop_fmu.fmu.standalone import Compiler, build_fmu, compilers
    if not c_compiler():
        pytest.skip("no C compiler (cc): the FMUs cannot be built")
    d = tmp_path_factory.mktemp("fuzzed")
    (d / "objects").mkdir()
    compiler = Compiler(d / "objects", compilers())
    return lambda kind, n, modes=None: build_fmu(kind, n, d, compiler, modes)


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    """Standalone assembly FMUs (co-simulation and Model Exchange), ``titop-fmu export``'s:
    ``tree``, a small tree with a loop closure, its units' names long (messages naming many of
    them); ``lone``, a loop closure alone (no state); ``slew``, examples/slew.toml, a closed loop
    (discrete states, time events)."""
    from titop_fmu.cli import main
    d = tmp_path_factory.mktemp("assembly")
    (d / "lone.toml").write_text(LONE_CLOSURE)
    base, arm, tip = "b" * 120, "a" * 120, "t" * 120
    (d / "tree.toml").write_text(f"""
links = [["{base}.c1", "{arm}.p"], ["{arm}.c1", "{tip}.p"], ["{base}.c2", "closure.l"], ["{tip}.c1", "closure.r"]]
record = ["{arm}.joint.q[3]", "{tip}.joint.q[3]", "{tip}.com.position"]
[units.{base}]
model = "floating_base_c2"
mass = 10.0
inertia = [[2, 0, 0], [0, 3, 0], [0, 0, 4]]
com = [0, 0, 0]
"c1.r" = [0.5, 0, 0]
"c2.r" = [0.5, 1, 0]
[units.{arm}]
model = "revolute_c1"
mass = 1.0
inertia = [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]
com = [0, 0.5, 0]
"c1.r" = [0, 1, 0]
axis = [0, 0, 1]
q0 = 0.1
[units.{tip}]
model = "prismatic_c1"
mass = 0.5
inertia = [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]]
com = [0, 0, 0]
"c1.r" = [0, 0, 0]
axis = [1, 0, 0]
[units.closure]
model = "loop_closure"
K = [[100, 0, 0, 0, 0, 0], [0, 100, 0, 0, 0, 0], [0, 0, 100, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]]
D = [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 0.1, 0, 0], [0, 0, 0, 0, 0.1, 0], [0, 0, 0, 0, 0, 0.1]]
""")
    files = {"tree": d / "tree.toml", "lone": d / "lone.toml", "slew": ROOT / "examples" / "slew.toml"}
    for name, path in files.items():
        assert main(["export", str(path), "--out", str(d / f"{name}.fmu"), "--fmu-kind", "standalone"]) == 0
    return {name: d / f"{name}.fmu" for name in files}


def layout(fmu: Path) -> list:
    """The fuzzer's arguments after the library: GUID, the numbers of parameters, inputs, outputs
    and locals (value references 0.. in that order), 1 if the FMU has Model Exchange."""
    md = read_model_description(str(fmu))
    causality = [v.causality for v in md.modelVariables]
    assert [v.valueReference for v in md.modelVariables] == list(range(len(causality)))
    counts = [sum(c == k for c in causality) for k in ("parameter", "input", "output", "local")]
    assert sum(counts) == len(causality)
    return [md.guid, *map(str, counts), str(int(md.modelExchange is not None))]


def fuzz(command, fmu, sequences, calls=60, seed=1, env=None, timeout=1800):
    """Run the fuzzer; its summary line (the test fails on any finding, with its output)."""
    r = subprocess.run([*command, *layout(fmu), "-s", str(sequences), "-c", str(calls), "-r", str(seed)],
                       capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **(env or {})))
    out = r.stderr + r.stdout
    assert r.returncode == 0 and "FAILED" not in out, out[-6000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"sequences {sequences} calls "), out[-3000:]
    print(f"\n[fuzz] {fmu.stem}: {summary}")
    return summary


@pytest.mark.slow
def test_the_fmi_api_of_a_block_fmu_under_the_sanitizers(sanitized, block_fmus):
    """400 sequences of 60 calls on a block FMU with states (about 1000 FMU states read back, 600
    of them corrupted), no finding."""
    fmu = block_fmus("revolute", 1)
    summary = fuzz([str(sanitized.fuzzer), str(sanitized(fmu))], fmu, 400, env=SANITIZER_ENV)
    blobs = int(summary.split("blobs read back ")[1].split()[0])
    assert blobs > 500


KINDS = [("floating_base", 2), ("revolute", 0), ("revolute", 2), ("prismatic", 1), ("welded", 1),
         ("imposed_motion_base", 1), ("revolute_inverse", 1), ("prismatic_inverse", 0), ("loop_closure", 0)]


@pytest.mark.slow
@pytest.mark.parametrize("kind,n", KINDS)
def test_the_fmi_api_of_every_kind_under_the_sanitizers(sanitized, block_fmus, kind, n):
    fmu = block_fmus(kind, n)
    fuzz([str(sanitized.fuzzer), str(sanitized(fmu))], fmu, 400, seed=10 + KINDS.index((kind, n)), env=SANITIZER_ENV)


@pytest.mark.slow
def test_the_fmi_api_of_a_flexible_block_fmu_under_the_sanitizers(sanitized, block_fmus):
    """A revolute body with a flexible body of 3 modes and 2 nodes (revolute_c2_f3): its modal
    data among the parameters the fuzzer sets (bad modal data: fmi2Error, never a crash)."""
    fmu = block_fmus("revolute", 2, 3)
    fuzz([str(sanitized.fuzzer), str(sanitized(fmu))], fmu, 200, seed=21, env=SANITIZER_ENV)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["tree", "lone", "slew"])
def test_the_fmi_api_of_an_assembly_with_model_exchange_under_the_sanitizers(sanitized, assembly, which):
    """A tree with a loop closure (its units' names long), a lone loop closure (no state), a
    closed loop (examples/slew.toml: an LQR sampled, a star tracker and a gyro)."""
    fmu = assembly[which]
    fuzz([str(sanitized.fuzzer), str(sanitized(fmu))], fmu, {"tree": 200, "lone": 400, "slew": 200}[which], seed=3,
         env=SANITIZER_ENV)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["block", "assembly"])
def test_the_shipped_binaries_under_valgrind(block_fmus, assembly, tmp_path, which):
    """The binaries as the FMUs ship them (-O2, no sanitizer), under valgrind's memcheck."""
    if not shutil.which("valgrind"):
        pytest.skip("no valgrind")
    fmu = block_fmus("floating_base", 1) if which == "block" else assembly["tree"]
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp_path)
    fuzzer = compile_c(FUZZ, tmp_path / "fmu_fuzz")
    binary = tmp_path / "binaries" / "linux64" / f"{fmu.stem}.so"
    fuzz(["valgrind", "--error-exitcode=25", "--leak-check=full", "--errors-for-leak-kinds=definite",
          "--quiet", str(fuzzer), str(binary)], fmu, 80 if which == "block" else 30, seed=4)
