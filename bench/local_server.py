"""What the protocol benches share: a tm-guide server on a loopback port, and catalogue pairs.

`LocalServer` starts `tm-guide serve` with its own SQLite file, index and job folders in `work`
(the environment's TM_GUIDE_* variables left out, `env` added), creates an admin key, and waits
until /ready answers. `catalogue_pairs` reads the pairs of gettext catalogues, as the benches
draw their memories and queries from the Debian packages' catalogues.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import polib
import requests

REPO = Path(__file__).resolve().parents[1]


def installed_catalogues() -> list[Path]:
    """The German .mo catalogues of the Debian packages installed on this machine."""
    return sorted(Path("/usr/share/locale/de/LC_MESSAGES").glob("*.mo"))


def catalogue_pairs(paths: Iterable[Path]) -> list[tuple[str, str]]:
    """Singular, translated, non-fuzzy (msgid, msgstr) pairs of PO or MO catalogues, in order;
    a catalogue that cannot be read is skipped."""
    pairs = []
    for path in paths:
        try:
            catalogue = polib.mofile(str(path)) if path.suffix == ".mo" else polib.pofile(str(path))
        except (OSError, ValueError):
            continue
        pairs.extend(
            (e.msgid, e.msgstr)
            for e in catalogue
            if e.msgid and e.msgstr and not e.msgid_plural and "fuzzy" not in e.flags
        )
    return pairs


class LocalServer:
    """A running server: `base` (its URL), `key` (an admin key), `env` (what it runs with)."""

    def __init__(
        self,
        work: Path,
        env: dict[str, str] | None = None,
        model: str | None = None,
        threads: int = 8,
    ) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.work = work
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
        self.env.update(
            TM_GUIDE_DB=f"sqlite:///{work / 'tm.sqlite'}",
            TM_GUIDE_INDEX_DIR=str(work / "index"),
            TM_GUIDE_JOBS_DIR=str(work / "jobs"),
            PYTHONPATH=str(REPO),
            **(env or {}),
        )
        if model:
            self.env["TM_GUIDE_MODEL"] = model
        self.key = self.cli("keys", "create", "bench-admin", "--scope", "*:write").split()[-1]
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self._log = open(work / "server.log", "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tm_guide", "serve", "--host", "127.0.0.1"]
            + ["--port", str(port), "--threads", str(threads)],
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                if requests.get(self.base + "/ready", timeout=60).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.3)
        self.stop()
        raise SystemExit(f"the server did not become ready; see {work / 'server.log'}")

    def cli(self, *args: str) -> str:
        """`tm-guide ARGS` on the server's database; its standard output."""
        done = subprocess.run(
            [sys.executable, "-m", "tm_guide", *args], env=self.env, capture_output=True, text=True
        )
        if done.returncode:
            raise SystemExit(f"tm-guide {' '.join(args)} failed:\n{done.stderr}")
        return done.stdout

    def import_pairs(self, memory: str, pairs: Iterable[tuple[str, str]]) -> None:
        """The one-line pairs into `memory` (an en -> de memory, created if needed)."""
        tsv = self.work / f"{memory}.tsv"
        one_line = [(s, t) for s, t in pairs if not any(c in s + t for c in "\t\r\n")]
        tsv.write_text("".join(f"{s}\t{t}\n" for s, t in one_line), encoding="utf-8")
        self.cli("import", memory, str(tsv), "-q", "--create", "en", "de")

    def create_memory(self, name: str) -> None:
        requests.post(
            self.base + "/v1/memories",
            json={"name": name, "source_lang": "en", "target_lang": "de"},
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=30,
        ).raise_for_status()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)
        self._log.close()
