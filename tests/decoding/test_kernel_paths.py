"""Every kernel path of the fused engine gives the portable loops' bits, checked on random
inputs by tests/csrc/kernels_check.cpp: natively (AVX-512 VNNI and AVX2 where the CPU has them)
and for NEON, with and without the dot product extension, by cross-compiling for AArch64 and
running under QEMU user emulation (Debian's g++-aarch64-linux-gnu and qemu-user; the test is
skipped, saying so, where they are missing).
The bundled model's scores and searches on every native path: tests/decoding/test_fused.py."""

from __future__ import annotations

import platform
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "csrc" / "kernels_check.cpp"
FLAGS = [
    line.strip()
    for line in (ROOT / "tm_guide/decoding/csrc/compile_flags.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]


def build_and_run(compiler: str, extra: list[str], runner: list[str], out: Path) -> str:
    subprocess.run(
        [compiler, "-std=c++17", *FLAGS, *extra, str(CHECK), "-o", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    done = subprocess.run([*runner, str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.skipif(shutil.which("g++") is None, reason="no C++ compiler")
def test_the_native_kernel_paths_give_the_portable_bits(tmp_path):
    extra = ["-march=native"] if platform.machine() in ("x86_64", "AMD64") else []
    report = build_and_run("g++", extra, [], tmp_path / "kernels_check")
    assert report.strip().splitlines()[-1].startswith("best: ")
    from tm_guide.decoding import compiled

    if compiled.available():  # the check and the built engine see the same CPU
        for path in compiled.kernels()[:-1]:
            assert f"{path}: 400 cases, the portable loops' bits" in report


@pytest.mark.skipif(
    platform.machine() == "aarch64"
    or not (shutil.which("aarch64-linux-gnu-g++") and shutil.which("qemu-aarch64")),
    reason="no AArch64 cross compiler or QEMU user emulation "
    "(apt-get install g++-aarch64-linux-gnu qemu-user)",
)
def test_the_neon_paths_give_the_portable_bits_under_emulation(tmp_path):
    """QEMU's default CPU has the dot product extension (neon-dotprod, then neon); a Cortex-A53
    has not: there the plain NEON path is the best."""
    binary = tmp_path / "kernels_check"
    report = build_and_run("aarch64-linux-gnu-g++", ["-static"], ["qemu-aarch64"], binary)
    assert "neon-dotprod: 400 cases, the portable loops' bits" in report
    assert "neon: 400 cases, the portable loops' bits" in report
    assert "best: neon-dotprod" in report
    done = subprocess.run(
        ["qemu-aarch64", "-cpu", "cortex-a53", str(binary)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "neon-dotprod" not in done.stdout
    assert "best: neon\n" in done.stdout
