#!/bin/bash
# Guided decoding on AArch64 (the fused engine's NEON path) against native CTranslate2 for
# AArch64, both under QEMU user emulation on an x86-64 Debian bookworm machine.
#
#   bench/emulated/aarch64.sh setup            # once: ~2 min, ~330 MB under $AARCH64_ROOT
#   bench/emulated/aarch64.sh build            # the extension again, after a C++ change
#   bench/emulated/aarch64.sh bench ARGS...    # bench/decoding_bench.py ARGS under emulation
#   bench/emulated/aarch64.sh python ARGS...   # any Python command under emulation
#
# setup makes, under $AARCH64_ROOT (default bench/emulated/.aarch64, git-ignored):
#   sysroot/  Debian's arm64 CPython 3.11 and the libraries it loads, unpacked (dpkg -x), not
#             installed
#   site/     the AArch64 wheels of this machine's versions of ctranslate2, numpy, sentencepiece
#             and the other packages tm_guide imports, unzipped; eflomal (no AArch64 wheel) is
#             cross-built from its sdist
# and cross-compiles tm_guide/decoding/_fused for AArch64 beside the x86-64 build (Python picks
# each by its ABI tag; both are git-ignored).
#
# The timings are of emulated instructions: ratios between engines in one run are what they
# show, not the speed of an AArch64 server.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
ROOT=${AARCH64_ROOT:-$REPO/bench/emulated/.aarch64}
SYSROOT=$ROOT/sysroot
PACKAGES="ctranslate2 numpy sentencepiece pyyaml langcodes language-data tqdm rapidfuzz"

host_version() { python3 -c "import importlib.metadata as m; print(m.version('$1'))"; }

setup() {
    mkdir -p "$ROOT" && cd "$ROOT"
    dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
    apt-get update -q
    if ! command -v qemu-aarch64 >/dev/null || ! command -v aarch64-linux-gnu-g++ >/dev/null; then
        apt-get install -y -q qemu-user g++-aarch64-linux-gnu
    fi

    # CPython 3.11 for arm64 and what it loads (bookworm's python3.11 bundles libmpdec)
    local debs="python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libpython3.11-dev
        libc6 libc6-dev libstdc++6 libgcc-s1 libgomp1 zlib1g libexpat1 libffi8 libssl3 libbz2-1.0
        liblzma5 libsqlite3-0 libuuid1 libncursesw6 libtinfo6 libreadline8 libdb5.3 libgdbm6
        libgdbm-compat4 libcrypt1 libnsl2 libtirpc3 libgssapi-krb5-2 libkrb5-3 libk5crypto3
        libcom-err2 libkrb5support0 libkeyutils1 libzstd1 media-types tzdata"
    rm -rf debs sysroot && mkdir -p debs sysroot
    (cd debs && for p in $debs; do apt-get download -q "$p:arm64" 2>/dev/null || apt-get download -q "$p"; done)
    for deb in debs/*.deb; do dpkg -x "$deb" sysroot; done

    # the AArch64 wheels of the versions installed here
    local pins=() name
    for name in $PACKAGES; do pins+=("$name==$(host_version "$name")"); done
    rm -rf wheels site && mkdir -p wheels site
    pip download -q --only-binary=:all: --python-version 3.11 --implementation cp \
        --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
        --platform manylinux_2_28_aarch64 -d wheels "${pins[@]}"
    for wheel in wheels/*.whl; do python3 -m zipfile -e "$wheel" site; done

    # eflomal (tm_guide.pieces imports it): Cython on this machine, C for AArch64
    local eflomal pyinc numpy_inc
    eflomal=$(host_version eflomal)
    pyinc="-I$SYSROOT/usr/include/python3.11 -idirafter $SYSROOT/usr/include"
    numpy_inc=$(python3 -c 'import numpy; print(numpy.get_include())')
    rm -rf sdist build && mkdir -p sdist build
    pip download -q --no-deps --no-binary=:all: --no-build-isolation -d sdist "eflomal==$eflomal"
    tar xzf "sdist/eflomal-$eflomal.tar.gz" -C build && mv "build/eflomal-$eflomal" build/eflomal
    (
        cd build/eflomal
        python3 -m cython -3 --module-name eflomal.cython -I "$numpy_inc" \
            python/eflomal/eflomal.pyx -o python/eflomal/cython.c
        # shellcheck disable=SC2086
        aarch64-linux-gnu-gcc -O3 -fPIC -shared -fno-strict-aliasing -DNDEBUG $pyinc \
            -I"$ROOT/site/numpy/_core/include" python/eflomal/cython.c \
            -o cython.cpython-311-aarch64-linux-gnu.so
        make -s -C src CC=aarch64-linux-gnu-gcc \
            CFLAGS="-Ofast -Wall --std=gnu99 -Wno-unused-function -fopenmp" eflomal
    )
    mkdir -p site/eflomal/bin
    cp build/eflomal/python/eflomal/__init__.py build/eflomal/cython.cpython-311-aarch64-linux-gnu.so \
        site/eflomal/
    cp build/eflomal/src/eflomal site/eflomal/bin/
    build
}

# the fused engine for AArch64: compile_flags.txt as setup.py uses it, no -march (the kernel
# paths are chosen at run time)
build() {
    local flags pyinc="-I$SYSROOT/usr/include/python3.11 -idirafter $SYSROOT/usr/include"
    flags=$(grep -v '^#' "$REPO/tm_guide/decoding/csrc/compile_flags.txt" | xargs)
    # shellcheck disable=SC2086
    aarch64-linux-gnu-g++ $flags -std=c++17 -fPIC -shared -fopenmp -O3 -fvisibility=hidden \
        -I"$(python3 -c 'import pybind11; print(pybind11.get_include())')" $pyinc \
        "$REPO/tm_guide/decoding/csrc/fused.cpp" \
        -o "$REPO/tm_guide/decoding/_fused.cpython-311-aarch64-linux-gnu.so"

    emulated -c 'import ctranslate2; from tm_guide.decoding import compiled
print("fused kernel paths:", compiled.kernels(), "| ctranslate2", ctranslate2.__version__,
      sorted(ctranslate2.get_supported_compute_types("cpu")))'
}

emulated() {
    [ -x "$SYSROOT/usr/bin/python3.11" ] || { echo "run: $0 setup" >&2; exit 2; }
    cd "$REPO"
    QEMU_LD_PREFIX=$SYSROOT PYTHONHOME=$SYSROOT/usr PYTHONPATH=$ROOT/site:$REPO \
        PYTHONNOUSERSITE=1 PYTHONDONTWRITEBYTECODE=1 OPENBLAS_NUM_THREADS=1 \
        qemu-aarch64 "$SYSROOT/usr/bin/python3.11" "$@"
}

case "${1:-}" in
    setup) setup ;;
    build) build ;;
    bench) shift; emulated bench/decoding_bench.py "$@" ;;
    python) shift; emulated "$@" ;;
    *) sed -n '2,8p' "$0" >&2; exit 2 ;;
esac
