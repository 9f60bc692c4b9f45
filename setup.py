"""Builds the optional compiled engine (tm_guide.decoding._fused); everything else is in
pyproject.toml. The build is optional: without a C++ compiler the install still succeeds and
guided decoding uses the torch or ct2 engine (tm_guide.decoding.fused_engine says which)."""

import os
import platform
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

CSRC = Path("tm_guide/decoding/csrc")
flags = [
    line.strip()
    for line in (CSRC / "compile_flags.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
]
# Vectorize for the CPU that builds it (the usual case: the machine that runs it). Set
# TM_GUIDE_PORTABLE_BUILD=1 when building for other machines (a wheel, an image built elsewhere):
# the kernel paths (AVX-512 VNNI, AVX2, NEON) are still chosen at run time by the CPU's features.
if os.environ.get("TM_GUIDE_PORTABLE_BUILD") != "1" and platform.machine() in ("x86_64", "AMD64"):
    flags.append("-march=native")

setup(
    ext_modules=[
        Pybind11Extension(
            "tm_guide.decoding._fused",
            [str(CSRC / "fused.cpp")],
            depends=[str(p) for p in CSRC.glob("*.h")],
            cxx_std=17,
            extra_compile_args=flags,
            extra_link_args=["-fopenmp"],
            optional=True,
        )
    ]
)
