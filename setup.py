"""Builds the optional compiled engine (tm_guide.decoding._fused); everything else is in
pyproject.toml. The build is optional: without a C++ compiler the install still succeeds and
guided decoding uses the torch or ct2 engine (tm_guide.decoding.fused_engine says which)."""

import os
import platform
from pathlib import Path

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

# Vectorize for the CPU that builds it (the usual case: the machine that runs it). Set
# TM_GUIDE_PORTABLE_BUILD=1 when building for other machines (a wheel, an image built elsewhere):
# the int8 products still pick AVX-512 VNNI at run time where the CPU has it.
# -ffp-contract=off: a * b + c stays two roundings on every CPU, as the AVX-512 paths compute it,
# so that the AVX-512 and portable kernels give the same bits.
flags = ["-O3", "-fno-math-errno", "-fopenmp-simd", "-ffp-contract=off"]
if os.environ.get("TM_GUIDE_PORTABLE_BUILD") != "1" and platform.machine() in ("x86_64", "AMD64"):
    flags.append("-march=native")

setup(
    ext_modules=[
        Pybind11Extension(
            "tm_guide.decoding._fused",
            ["tm_guide/decoding/csrc/fused.cpp"],
            depends=[str(p) for p in Path("tm_guide/decoding/csrc").glob("*.h")],
            cxx_std=17,
            extra_compile_args=flags,
            optional=True,
        )
    ]
)
