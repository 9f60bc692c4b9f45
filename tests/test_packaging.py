"""The wheel's package list (pyproject.toml) covers the code, and ships the Alembic scripts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def setuptools_config() -> dict:  # type: ignore[type-arg]
    with open(ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["tool"]["setuptools"]


def test_every_python_package_of_the_repository_is_in_the_wheel() -> None:
    mapped = {folder: package for package, folder in setuptools_config()["package-dir"].items()}
    found = set()
    for top in ("tm_guide", *mapped):
        for init in (ROOT / top).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            found.add(".".join((mapped.get(parts[0], parts[0]), *parts[1:])))
    listed = set(setuptools_config()["packages"])
    assert found <= listed, f"add to pyproject.toml [tool.setuptools] packages: {found - listed}"


def test_the_wheel_installs_one_top_level_package() -> None:
    """Everything lives under tm_guide: a top-level name such as `server` in site-packages would
    collide with any other project's module of that name."""
    tops = {name.split(".")[0] for name in setuptools_config()["packages"]}
    assert tops == {"tm_guide"}


def test_the_server_folder_ships_as_tm_guide_server() -> None:
    """The design card's layout keeps server/ at the top of the repository; installed, it is
    tm_guide.server, and the checkout reaches it through the tm_guide/server link."""
    assert setuptools_config()["package-dir"]["tm_guide.server"] == "server"
    link = ROOT / "tm_guide" / "server"
    assert link.is_symlink() and link.resolve() == (ROOT / "server").resolve()
    import tm_guide.server

    assert Path(tm_guide.server.__file__).resolve().parent == (ROOT / "server").resolve()


def test_migrations_ship_as_a_package_of_the_wheel() -> None:
    config = setuptools_config()
    assert config["package-dir"]["tm_guide._migrations"] == "migrations"
    versions = sorted((ROOT / "migrations" / "versions").glob("*.py"))
    assert versions and {"tm_guide._migrations", "tm_guide._migrations.versions"} <= set(
        config["packages"]
    )
    assert "script.py.mako" in config["package-data"]["tm_guide._migrations"]


def test_the_compiled_engine_is_built_where_a_compiler_is() -> None:
    """The extension's build is optional (an install without a compiler still works), so a
    failed build on a machine that has one would otherwise go unnoticed."""
    from tm_guide.decoding import compiled

    compiler = (sysconfig.get_config_var("CXX") or "c++").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C++ compiler ({compiler}) on this machine")
    assert compiled.available(), "pip install did not build tm_guide.decoding._fused"


def test_the_compiled_engine_builds_without_tuning_for_the_building_cpu(tmp_path: Path) -> None:
    """TM_GUIDE_PORTABLE_BUILD=1 (images, wheels) drops -march=native: the AVX-512 functions must
    still compile on their own target attributes."""
    import pybind11

    compiler = (sysconfig.get_config_var("CXX") or "c++").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C++ compiler ({compiler}) on this machine")
    command = [
        compiler,
        "-std=c++17",
        "-O0",
        "-fopenmp-simd",
        "-ffp-contract=off",
        "-fPIC",
        "-c",
        f"-I{pybind11.get_include()}",
        f"-I{sysconfig.get_paths()['include']}",
        str(ROOT / "tm_guide" / "decoding" / "csrc" / "fused.cpp"),
        "-o",
        str(tmp_path / "fused.o"),
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-2000:]


SERVE_ONCE = """
import sys
from tm_guide.server import create_app
from tm_guide.server.config import ServerConfig

client = create_app(ServerConfig.from_env()).test_client()
local = {"REMOTE_ADDR": "127.0.0.1"}
memory = {"name": "m", "source_lang": "en", "target_lang": "de"}
assert client.post("/v1/memories", json=memory, environ_base=local).status_code == 201
pair = {"source": "Open the file.", "target": "Öffnen Sie die Datei."}
assert client.post("/v1/memories/m/segments", json=pair, environ_base=local).status_code == 201
asked = {"source": "Open the file now.", "memories": ["m"]}
assert client.post("/v1/suggest", json=asked, environ_base=local).status_code == 200
print(" ".join(sorted(sys.modules)))
"""


def test_serving_a_guided_suggestion_imports_nothing_of_training(tmp_path: Path) -> None:
    """The training code and its dependencies stay behind the [train] extra: a server that
    answers a guided suggestion never imports them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
    env.update({"TM_GUIDE_DB": f"sqlite:///{tmp_path / 'tm.sqlite'}", "TM_GUIDE_AUTH": "off"})
    done = subprocess.run(
        [sys.executable, "-c", SERVE_ONCE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert "tm_guide.decoding.guided" in loaded  # the model translated
    training = [
        m
        for m in loaded
        if m.startswith("tm_guide.train")
        or m.split(".")[0] in ("transformers", "matplotlib", "sacrebleu")
    ]
    assert training == []


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    """pyproject.toml's [tool.importlinter] layers, checked by import-linter (lazy imports
    included): the CLI on top, then the server, the eval and training side by side, then the
    decoding and model packages, pieces, the store, and the leaves; and the CAT-tool protocols
    reach the model, pieces and index only through server.suggestions."""
    here = str(Path(sys.executable).parent)
    lint = shutil.which("lint-imports", path=here) or shutil.which("lint-imports")
    assert lint is not None, "import-linter is part of the [dev] extra: pip install -e '.[dev]'"
    done = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 kept, 0 broken" in done.stdout


def test_the_package_type_checks(tmp_path: Path) -> None:
    """mypy over tm_guide ([tool.mypy] in pyproject.toml), with a cache of its own so that a
    run never reads another's: 0 errors."""
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), "tm_guide"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_no_module_is_part_of_an_import_cycle() -> None:
    """No chain of imports leads from a module back to itself, `TYPE_CHECKING` imports included
    (grimp, import-linter's graph, counts them)."""
    import grimp

    graph = grimp.build_graph("tm_guide")
    cycles = [
        module
        for module in sorted(graph.modules)
        if graph.find_downstream_modules(module) & graph.find_upstream_modules(module)
    ]
    assert cycles == []
