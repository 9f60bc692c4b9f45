r"""Replay Weblate's tmserver traffic against tm-guide and translate-toolkit 3.0.0's tmserver.

What it measures: for each real catalogue, how often tm-guide's amaGama/tmserver endpoint gives
Weblate a suggestion where the reference server (translate-toolkit 3.0.0 `tmserver`, what amaGama
grew from) gives one, whether the best suggestion is the same, HTTP failures, and latency.

Per catalogue the (msgid, msgstr) pairs (singular, translated, not fuzzy, multi-line included;
exact duplicates dropped) are shuffled with --seed; the last 80% become the translation memory,
the first 20% (at most --per-catalogue) the queries. Both servers get the same memory, written as
one PO file: `tm-guide memory create` + `tm-guide import`, and the reference's `-f tm.po` import.
Each query is sent to both as Weblate's tmserver machinery sends it:

  GET {url}/{src}/{tgt}/unit/{quote(text[:500].replace("\r", " ").encode(), safe=b"")}

with lower-case, underscore language codes (en, de, zh_hans), and only units whose
int(quality) >= 75 count. A query is "answered" by a server when at least one unit passes.

Probes are added to every memory and queried as well: a lone "/", texts starting with "/",
multi-line texts, and (for the Chinese catalogue) a 460-character CJK text; the category table
says per kind of text how many answers came back 200 and how many were answered.

Catalogues (Debian packages): django = every django.po of python3-django for German (core and
contrib), en -> de; coreutils = /usr/share/locale/de/LC_MESSAGES/coreutils.mo, en -> de;
django-zh = the zh_Hans django.po files read backwards, zh_hans -> en (a Chinese source text).

The reference runs from its own virtualenv (--reference-python, default /tmp/tt3/bin/python)
through bench/tmserver_reference.py, which by default hands it the text Weblate sent (its cheroot
server otherwise passes UTF-8 as Latin-1 and keeps %2F; --reference stock measures that too):

  python -m venv /tmp/tt3
  /tmp/tt3/bin/pip install translate-toolkit==3.0.0 cheroot python-Levenshtein

Example (a few minutes on two cores):

  python bench/tmserver_replay.py --catalogues django,coreutils,django-zh --per-catalogue 300
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import quote

import polib
import requests

REPO = Path(__file__).resolve().parents[1]
DJANGO = "/usr/lib/python3/dist-packages/django"
THRESHOLD = 75  # Weblate's tmserver threshold
QUERY_SHARE = 0.2
SERVERS = ("reference", "tm-guide")


@dataclass(frozen=True)
class Pair:
    source: str
    target: str
    context: str = ""


@dataclass(frozen=True)
class CatalogueSpec:
    files: str  # glob
    source_lang: str  # Weblate's code: lower case, underscore
    target_lang: str
    backwards: bool = False  # msgstr is the source text


CATALOGUES = {
    "django": CatalogueSpec(f"{DJANGO}/**/locale/de/LC_MESSAGES/django.po", "en", "de"),
    "coreutils": CatalogueSpec("/usr/share/locale/de/LC_MESSAGES/coreutils.mo", "en", "de"),
    "django-zh": CatalogueSpec(
        f"{DJANGO}/**/locale/zh_Hans/LC_MESSAGES/django.po", "zh_hans", "en", backwards=True
    ),
}

MULTILINE_PROBE = Pair(
    "Usage: cp [OPTION]... SOURCE DEST\n  or:  cp [OPTION]... SOURCE... DIRECTORY\n",
    "Aufruf: cp [OPTION]... QUELLE ZIEL\n  oder:  cp [OPTION]... QUELLE... VERZEICHNIS\n",
)
SLASH_PROBES = [
    Pair("/", "/"),
    Pair("/usr/share/doc", "/usr/share/doc"),
    Pair(
        "/etc/passwd: No such file or directory",
        "/etc/passwd: Datei oder Verzeichnis nicht gefunden",
    ),
]


@dataclass
class Reply:
    status: int  # 0: no HTTP answer (connection error, timeout)
    ms: float
    units: list[tuple[int, str]] = field(default_factory=list)  # (quality, target) >= THRESHOLD
    error: str = ""


@dataclass
class Record:
    catalogue: str
    kind: str  # "query" (held out) or "probe"
    category: str
    text: str
    expected: str
    replies: dict[str, Reply]


# --- catalogues --------------------------------------------------------------------------------


def read_pairs(path: str, backwards: bool) -> list[Pair]:
    """Singular, translated, non-fuzzy pairs of one PO or MO file."""
    catalogue = polib.mofile(path) if path.endswith(".mo") else polib.pofile(path)
    pairs = []
    for entry in catalogue:
        if not entry.msgid or not entry.msgstr or entry.msgid_plural or entry.obsolete:
            continue
        if "fuzzy" in entry.flags:
            continue
        source, target = (entry.msgstr, entry.msgid) if backwards else (entry.msgid, entry.msgstr)
        pairs.append(Pair(source, target, entry.msgctxt or ""))
    return pairs


def load_catalogue(spec: CatalogueSpec) -> list[Pair]:
    files = sorted(glob.glob(spec.files, recursive=True))
    if not files:
        raise SystemExit(f"no file matches {spec.files} (install the Debian package)")
    seen: dict[Pair, None] = {}
    for path in files:
        seen.update(dict.fromkeys(read_pairs(path, spec.backwards)))
    return list(seen)


def split(pairs: list[Pair], seed: int, cap: int) -> tuple[list[Pair], list[Pair]]:
    """(memory, queries): the last 80% of a seeded shuffle, and up to `cap` of the first 20%."""
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    held = int(round(len(shuffled) * QUERY_SHARE))
    return shuffled[held:], shuffled[: min(held, cap)]


def cjk_probe(memory: list[Pair]) -> Pair:
    """A 460-character Chinese text made of the memory's own sources."""
    text = ""
    for pair in memory:
        if any(unicodedata.east_asian_width(c) == "W" for c in pair.source):
            text += pair.source.replace("\n", "")
        if len(text) >= 460:
            return Pair(text[:460], "CJK probe")
    raise SystemExit("the catalogue has too little Chinese text for the CJK probe")


def probes(spec: CatalogueSpec, memory: list[Pair]) -> list[Pair]:
    if spec.source_lang.startswith("zh"):
        return [cjk_probe(memory), *SLASH_PROBES]
    return [MULTILINE_PROBE, *SLASH_PROBES]


def category(text: str) -> str:
    if text == "/":
        return "lone /"
    if text.startswith("/"):
        return "starts with /"
    if "\n" in text:
        return "newline"
    if len(text) >= 400 and any(unicodedata.east_asian_width(c) == "W" for c in text):
        return "CJK 400+ chars"
    return "plain"


def write_po(pairs: list[Pair], path: Path) -> None:
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8", "MIME-Version": "1.0"}
    for pair in pairs:
        po.append(
            polib.POEntry(msgid=pair.source, msgstr=pair.target, msgctxt=pair.context or None)
        )
    po.save(str(path))


# --- servers -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise SystemExit(f"{url}: the server exited ({process.returncode}):\n{tail}")
        try:
            requests.get(url, timeout=10)
            return
        except requests.ConnectionError:
            time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:]
    raise SystemExit(f"{url}: the server did not answer in 120 s:\n{tail}")


@contextmanager
def running(command: list[str], env: dict[str, str], probe_url: str, log: Path) -> Iterator[None]:
    """Run `command` until the block ends; it is up once `probe_url` answers at all."""
    with open(log, "wb") as out:
        process = subprocess.Popen(command, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_up(process, probe_url, log)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def reference_server(
    python: str, mode: str, po: Path, spec: CatalogueSpec, work: Path
) -> Iterator[str]:
    """translate-toolkit's tmserver (bench/tmserver_reference.py) on a loopback port; yields
    Weblate's URL for it."""
    port = free_port()
    command = [
        python,
        str(REPO / "bench/tmserver_reference.py"),
        "--db",
        str(work / "ref.db"),
        "--po",
        str(po),
        "-s",
        spec.source_lang,
        "-t",
        spec.target_lang,
        "--port",
        str(port),
    ]
    if mode == "stock":
        command.append("--stock")
    base = f"http://127.0.0.1:{port}/tmserver"
    probe = weblate_url(base, spec.source_lang, spec.target_lang, "up")  # its 404 page is broken
    with running(command, dict(os.environ), probe, work / "reference.log"):
        yield base


def tm_guide_env(work: Path, auth: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TM_GUIDE_")}
    env.update(
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        TM_GUIDE_DB=f"sqlite:///{work / 'tm.sqlite'}",
        TM_GUIDE_INDEX_DIR=str(work / "index"),
        TM_GUIDE_JOBS_DIR=str(work / "jobs"),
        TM_GUIDE_MODEL=str(work / "no-model"),  # the tmserver endpoint needs no model
        TM_GUIDE_AUTH="off" if auth == "off" else "on",
        TM_GUIDE_PROTOCOLS="tmserver",  # only the endpoint measured (versions without it ignore it)
        OMP_NUM_THREADS="1",
    )
    return env


def tm_guide_cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tm_guide", *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode:
        raise SystemExit(f"tm-guide {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def tm_guide_lang(code: str) -> str:
    """Weblate's zh_hans as the BCP 47 tag a tm-guide memory is created with."""
    head, _, tail = code.partition("_")
    if not tail:
        return head
    return f"{head}-{tail.title() if len(tail) == 4 else tail.upper()}"


@contextmanager
def tm_guide_server(po: Path, spec: CatalogueSpec, work: Path, auth: str) -> Iterator[str]:
    """`tm-guide serve` with the memory imported; yields Weblate's URL for its tmserver."""
    env = tm_guide_env(work, auth)
    tm_guide_cli(
        env,
        "memory",
        "create",
        "bench",
        tm_guide_lang(spec.source_lang),
        tm_guide_lang(spec.target_lang),
    )
    tm_guide_cli(env, "import", "-q", "bench", str(po))
    prefix = "/tmserver"
    if auth == "key":
        token = tm_guide_cli(env, "keys", "create", "weblate", "--scope", "bench:read")
        prefix += "/key/" + token.split()[-1]
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "tm_guide",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--threads",
        "4",
        "--no-warm",
    ]
    base = f"http://127.0.0.1:{port}"
    with running(command, env, base + "/health", work / "tm-guide.log"):
        yield base + prefix


# --- Weblate's client --------------------------------------------------------------------------


def weblate_url(base: str, source_lang: str, target_lang: str, text: str) -> str:
    """weblate/machinery/tmserver.py: the text, cut to 500 characters, is the last path part."""
    quoted = quote(text[:500].replace("\r", " ").encode(), safe=b"")
    return f"{base}/{source_lang}/{target_lang}/unit/{quoted}"


def lookup(session: requests.Session, url: str) -> Reply:
    """One Weblate lookup: the units it keeps (int(quality) >= 75), best first as served."""
    started = time.perf_counter()
    try:
        response = session.get(url, timeout=60)
    except requests.RequestException as exc:
        return Reply(0, (time.perf_counter() - started) * 1000, error=type(exc).__name__)
    ms = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        return Reply(response.status_code, ms, error=response.text[:200])
    try:
        units = [(int(u["quality"]), str(u["target"])) for u in response.json()]
    except (ValueError, TypeError, KeyError) as exc:
        return Reply(response.status_code, ms, error=f"bad body: {exc}")
    return Reply(200, ms, [u for u in units if u[0] >= THRESHOLD])


def replay(
    name: str, spec: CatalogueSpec, asked: list[tuple[str, Pair]], bases: dict[str, str]
) -> list[Record]:
    """Every text to every server, the server asked first alternating per text."""
    sessions = {server: requests.Session() for server in bases}
    for server, base in bases.items():  # one warm-up each: first-call costs are not traffic
        lookup(sessions[server], weblate_url(base, spec.source_lang, spec.target_lang, "warm up"))
    records = []
    for i, (kind, pair) in enumerate(asked):
        order = list(bases) if i % 2 == 0 else list(reversed(bases))
        replies = {
            server: lookup(
                sessions[server],
                weblate_url(bases[server], spec.source_lang, spec.target_lang, pair.source),
            )
            for server in order
        }
        records.append(
            Record(
                name,
                kind,
                category(pair.source),
                pair.source,
                pair.target,
                {s: replies[s] for s in SERVERS},
            )
        )
    return records


def run_catalogue(
    name: str, seed: int, cap: int, reference: tuple[str, str], auth: str
) -> tuple[list[Record], dict[str, int]]:
    spec = CATALOGUES[name]
    memory, queries = split(load_catalogue(spec), seed, cap)
    extra = probes(spec, memory)
    asked = [("query", q) for q in queries] + [("probe", p) for p in extra]
    with tempfile.TemporaryDirectory(prefix=f"tmserver-replay-{name}-") as tmp:
        work = Path(tmp)
        po = work / "tm.po"
        write_po(memory + extra, po)
        (work / "ref").mkdir()
        (work / "tmg").mkdir()
        with (
            reference_server(*reference, po, spec, work / "ref") as ref,
            tm_guide_server(po, spec, work / "tmg", auth) as tmg,
        ):
            records = replay(name, spec, asked, {"reference": ref, "tm-guide": tmg})
    return records, {"memory": len(memory) + len(extra), "queries": len(queries)}


# --- summaries ---------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, int(round(share * len(ordered))) - 1)]


def summarise(records: list[Record]) -> dict[str, object]:
    ref = [r.replies["reference"] for r in records]
    tmg = [r.replies["tm-guide"] for r in records]
    both = [(a, b) for a, b in zip(ref, tmg, strict=True) if a.units and b.units]
    row: dict[str, object] = {
        "queries": len(records),
        "answered_reference": sum(bool(a.units) for a in ref),
        "answered_tm_guide": sum(bool(b.units) for b in tmg),
        "answered_both": len(both),
        "same_top_target": sum(a.units[0][1] == b.units[0][1] for a, b in both),
        "same_top_quality": sum(a.units[0][0] == b.units[0][0] for a, b in both),
    }
    for server, replies in (("reference", ref), ("tm_guide", tmg)):
        ms = [r.ms for r in replies if r.status]
        row[f"http_errors_{server}"] = sum(r.status != 200 for r in replies)
        row[f"p50_ms_{server}"] = round(statistics.median(ms), 1) if ms else None
        row[f"p95_ms_{server}"] = round(percentile(ms, 0.95), 1) if ms else None
    return row


def by_category(records: list[Record]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for record in records:
        row = table.setdefault(
            record.category,
            {
                "n": 0,
                "200_reference": 0,
                "200_tm_guide": 0,
                "answered_reference": 0,
                "answered_tm_guide": 0,
            },
        )
        row["n"] += 1
        for server, key in (("reference", "reference"), ("tm-guide", "tm_guide")):
            reply = record.replies[server]
            row[f"200_{key}"] += reply.status == 200
            row[f"answered_{key}"] += bool(reply.units)
    return table


def markdown(rows: dict[str, dict[str, object]], categories: dict[str, dict[str, int]]) -> str:
    lines = [
        "| catalogue | TM | queries | ref answered | tm-guide answered | both | same top target "
        "| same top quality | HTTP errors ref / tm-guide | p50 ms ref / tm-guide "
        "| p95 ms ref / tm-guide |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['memory']} | {r['queries']} | {r['answered_reference']} "
            f"| {r['answered_tm_guide']} | {r['answered_both']} "
            f"| {r['same_top_target']}/{r['answered_both']} "
            f"| {r['same_top_quality']}/{r['answered_both']} "
            f"| {r['http_errors_reference']} / {r['http_errors_tm_guide']} "
            f"| {r['p50_ms_reference']} / {r['p50_ms_tm_guide']} "
            f"| {r['p95_ms_reference']} / {r['p95_ms_tm_guide']} |"
        )
    lines += [
        "",
        "| texts (held-out + probes) | n | 200 ref | 200 tm-guide | answered ref "
        "| answered tm-guide |",
        "|---|---|---|---|---|---|",
    ]
    for name, c in sorted(categories.items()):
        lines.append(
            f"| {name} | {c['n']} | {c['200_reference']} | {c['200_tm_guide']} "
            f"| {c['answered_reference']} | {c['answered_tm_guide']} |"
        )
    return "\n".join(lines)


def git_state() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "tm_guide"],
        cwd=REPO,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--catalogues",
        default="django,coreutils,django-zh",
        help=f"comma-separated, of: {', '.join(CATALOGUES)}",
    )
    parser.add_argument("--per-catalogue", type=int, default=300, help="most queries per catalogue")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=REPO / "bench/out/tmserver_replay.json")
    parser.add_argument(
        "--reference-python",
        default="/tmp/tt3/bin/python",
        help="python of the virtualenv holding translate-toolkit 3.0.0",
    )
    parser.add_argument(
        "--reference",
        choices=("decoded", "stock"),
        default="decoded",
        help="decoded: the reference reads the text Weblate sent (UTF-8, %%2F); "
        "stock: as the tmserver script serves it (see bench/tmserver_reference.py)",
    )
    parser.add_argument(
        "--auth",
        choices=("off", "key"),
        default="off",
        help="tm-guide without keys, or with a read key in the path "
        "(/tmserver/key/<token>/..., newer versions only)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.catalogues.split(",") if n.strip()]
    unknown = [n for n in names if n not in CATALOGUES]
    if unknown:
        parser.error(f"unknown catalogue {unknown[0]!r}; known: {', '.join(CATALOGUES)}")

    rows: dict[str, dict[str, object]] = {}
    records: list[Record] = []
    for name in names:
        started = time.monotonic()
        got, sizes = run_catalogue(
            name, args.seed, args.per_catalogue, (args.reference_python, args.reference), args.auth
        )
        records += got
        rows[name] = {**sizes, **summarise([r for r in got if r.kind == "query"])}
        print(f"{name}: {time.monotonic() - started:.0f} s", file=sys.stderr)
    categories = by_category(records)
    print(
        f"tm-guide {git_state()} vs translate-toolkit 3.0.0 tmserver ({args.reference}), "
        f"seed {args.seed}, threshold {THRESHOLD}, tm-guide auth {args.auth}\n"
    )
    print(markdown(rows, categories))

    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "tm_guide": git_state(),
        "settings": {
            "catalogues": names,
            "per_catalogue": args.per_catalogue,
            "seed": args.seed,
            "auth": args.auth,
            "reference": args.reference,
            "threshold": THRESHOLD,
        },
        "catalogues": rows,
        "categories": categories,
        "records": [asdict(r) for r in records],
    }
    args.out.write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    print(f"\nwrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
