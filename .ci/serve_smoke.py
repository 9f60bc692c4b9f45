"""The serve install's smoke test: what a new user does after the README's serve line.

Run with the Python of a virtualenv that holds exactly `pip install -e ".[torch]"` (no dev or
train extras): it uses the standard library only. It starts `tm-guide serve` on a free loopback
port with its own SQLite file, creates a memory over /v1, imports the README's example TMX
(docs/examples/help.tmx) as a job, aligns it with `tm-guide align`, and asks for an exact, a
close (repaired) and a far sentence through /v1/suggest, tmserver, LibreTranslate, ModernMT and
DeepL. Any answer other than 200, or a close match that was not repaired, fails it (exit 1),
with the server's log printed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

MEMORY = "help"
EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "help.tmx"  # the README's
EXACT = "Click the Save button to save the document."  # a unit of the example file
CLOSE = "Click the Save button to save the file."
FAR = "The weather in the mountains changes quickly."


class SmokeFailure(Exception):
    pass


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Http:
    def __init__(self, base: str) -> None:
        self.base = base

    def call(
        self,
        method: str,
        path: str,
        *,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        what: str,
    ) -> Any:
        request = urllib.request.Request(
            self.base + path, data=data, headers=headers or {}, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, body = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, body = error.code, error.read()
        if status not in (200, 201, 202):
            raise SmokeFailure(f"{what}: {method} {path} answered {status}: {body[:500]!r}")
        print(f"ok  {status}  {what}")
        return json.loads(body) if body else None

    def json(self, method: str, path: str, payload: Any, token: str, what: str) -> Any:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        return self.call(
            method, path, data=json.dumps(payload).encode(), headers=headers, what=what
        )

    def form(self, path: str, fields: dict[str, str], headers: dict[str, str], what: str) -> Any:
        data = urllib.parse.urlencode(fields).encode()
        sent = {"Content-Type": "application/x-www-form-urlencoded", **headers}
        return self.call("POST", path, data=data, headers=sent, what=what)


def tm_guide(env: dict[str, str], *args: str) -> str:
    command = [str(Path(sys.executable).with_name("tm-guide")), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SmokeFailure(f"tm-guide {' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stdout


def wait_until_up(http: Http, server: subprocess.Popen[bytes], deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SmokeFailure(f"the server exited with {server.returncode}")
        try:
            with urllib.request.urlopen(http.base + "/ready", timeout=5) as response:
                if response.status == 200:
                    return
        except (OSError, urllib.error.HTTPError):
            pass
        time.sleep(0.5)
    raise SmokeFailure(f"the server was not ready within {deadline_s:.0f} s")


def check_suggest(http: Http, token: str) -> None:
    for label, text in (("exact", EXACT), ("close", CLOSE), ("far", FAR)):
        body = http.json(
            "POST", "/v1/suggest", {"source": text, "memories": [MEMORY]}, token, f"/v1 {label}"
        )
        result = body["results"][0]
        translation = result["translation"]
        if not translation or not translation["text"]:
            raise SmokeFailure(f"/v1 {label}: no translation in {result}")
        if label == "exact" and translation["origin"] != "tm":
            raise SmokeFailure(f"/v1 exact: the TM target was not served: {translation}")
        if label == "close" and not translation.get("repaired"):
            raise SmokeFailure(f"/v1 close: the close match was not repaired: {translation}")
        if label != "far" and not result["matches"]:
            raise SmokeFailure(f"/v1 {label}: no TM match: {result}")


def check_protocols(http: Http, token: str) -> None:
    for label, text in (("exact", EXACT), ("close", CLOSE), ("far", FAR)):
        quoted = urllib.parse.quote(text, safe="")
        units = http.call(
            "GET", f"/tmserver/key/{token}/en/de/unit/{quoted}", what=f"tmserver {label}"
        )
        if label != "far" and not units:
            raise SmokeFailure(f"tmserver {label}: no TM match")
        http.form(
            "/libretranslate/translate",
            {"q": text, "source": "en", "target": "de", "api_key": token},
            {},
            f"LibreTranslate {label}",
        )
        query = urllib.parse.urlencode({"source": "en", "target": "de", "q": text})
        http.call(
            "GET",
            f"/modernmt/translate?{query}",
            headers={"MMT-ApiKey": token},
            what=f"ModernMT {label}",
        )
        http.form(
            "/deepl/v2/translate",
            {"text": text, "target_lang": "DE"},
            {"Authorization": f"DeepL-Auth-Key {token}"},
            f"DeepL {label}",
        )


def run(work: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
    env.update(
        {
            "TM_GUIDE_DB": f"sqlite:///{work / 'tm.sqlite'}",
            "TM_GUIDE_INDEX_DIR": str(work / "index"),
            "TM_GUIDE_JOBS_DIR": str(work / "jobs"),
        }
    )
    admin = tm_guide(env, "keys", "create", "smoke-admin", "--scope", "*:write").split()[-1]
    port = free_port()
    http = Http(f"http://127.0.0.1:{port}")
    log_path = work / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("tm-guide")), "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_up(http, server, 180)
        http.json(
            "POST",
            "/v1/memories",
            {"name": MEMORY, "source_lang": "en", "target_lang": "de"},
            admin,
            "create memory",
        )
        started = http.call(
            "POST",
            f"/v1/memories/{MEMORY}/imports",
            data=EXAMPLE.read_bytes(),
            headers={"Content-Type": "application/x-tmx+xml", "Authorization": f"Bearer {admin}"},
            what="import TMX",
        )
        deadline = time.monotonic() + 120
        job = started["job"]
        while job["status"] not in ("succeeded", "failed", "interrupted"):
            if time.monotonic() > deadline:
                raise SmokeFailure(f"the import job did not end: {job}")
            time.sleep(0.2)
            job = http.call(
                "GET",
                started["status_url"],
                headers={"Authorization": f"Bearer {admin}"},
                what="import job",
            )
        if job["status"] != "succeeded":
            raise SmokeFailure(f"the import job ended {job['status']}: {job}")
        print(tm_guide(env, "align", MEMORY).strip())
        reader = tm_guide(env, "keys", "create", "smoke-reader", "--scope", f"{MEMORY}:read")
        token = reader.split()[-1]
        check_suggest(http, token)
        check_protocols(http, token)
    except SmokeFailure:
        print(log_path.read_text(errors="replace")[-6000:], file=sys.stderr)
        raise
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tm-guide-smoke-") as work:
        try:
            run(Path(work))
        except SmokeFailure as failure:
            print(f"FAILED: {failure}", file=sys.stderr)
            return 1
    print("serve smoke: all answers 200")
    return 0


if __name__ == "__main__":
    sys.exit(main())
