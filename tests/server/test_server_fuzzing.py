"""schemathesis against the real server: every operation of the OpenAPI document, every check,
the examples, coverage, fuzzing and stateful phases, with a fixed seed and a bounded number of
examples (tests/server/schemathesis.toml, whose comments give each per-operation rule its
reason). 0 failures on SQLite and on PostgreSQL: the server answers what the document says and
refuses what it refuses. Run by hand with more examples:

    TM_GUIDE_FUZZ_TOKEN=<admin key> PYTHONPATH=tests/server st --config-file \
        tests/server/schemathesis.toml run http://127.0.0.1:8000/v1/openapi.json --max-examples 200
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tm_guide import languages
from tm_guide.config import BUNDLED_MODEL

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "schemathesis.toml"
SPEC = HERE.parents[1] / "tm_guide" / "server" / "openapi.yaml"
EXAMPLES = 6  # per operation and phase, per database: a fixed budget (more by hand, see above)


def run_schemathesis(server, tmp_path: Path) -> None:
    # the test install's own script, beside this interpreter, whether or not its bin is on PATH
    here = str(Path(sys.executable).parent)
    st = shutil.which("st", path=here) or shutil.which("st")
    assert st is not None, "schemathesis is part of the [dev] extra: pip install -e '.[dev]'"
    env = {
        **os.environ,
        "TM_GUIDE_FUZZ_TOKEN": server.client.token,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    url = f"http://127.0.0.1:{server.client.port}/v1/openapi.json"
    done = subprocess.run(
        [st, "--config-file", str(CONFIG), "run", url, "--no-color"]
        + ["--max-examples", str(EXAMPLES)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-20000:]
    assert " passed" in report and "failures" not in report.splitlines()[-1], report[-3000:]


def test_schemathesis_finds_nothing_on_sqlite(start_server, tmp_path) -> None:
    run_schemathesis(start_server(model=BUNDLED_MODEL, threads=8), tmp_path)


def test_schemathesis_finds_nothing_on_postgresql(start_server, pg_database_url, tmp_path) -> None:
    run_schemathesis(start_server(db_url=pg_database_url, model=BUNDLED_MODEL, threads=8), tmp_path)


def test_the_documents_language_tag_is_the_one_the_server_reads() -> None:
    """One rule for a language tag's spelling: tm_guide.languages.SPELLING, which the OpenAPI
    document's LanguageTag pattern repeats for clients and the fuzzer."""
    document = yaml.safe_load(SPEC.read_text(encoding="utf-8"))
    assert document["components"]["schemas"]["LanguageTag"]["pattern"] == (
        f"^{languages.SPELLING.pattern}$"
    )
