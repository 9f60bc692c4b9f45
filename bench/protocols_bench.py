r"""Latency of each CAT-tool protocol's translate call against /v1/suggest, on the same segments.

Starts `tm-guide serve` (SQLite, the bundled demo model unless --model) on a free loopback port,
imports a catalogue's pairs as a memory (all but --queries of them, held out at random), then for
each held-out source sends, in an order that rotates per segment so that no protocol always goes
first:

  v1        POST /v1/suggest (guided translation + matches)
  libre     POST /libretranslate/translate
  modernmt  GET  /modernmt/translate
  deepl     POST /deepl/v2/translate
  tmserver  GET  /tmserver/key/<token>/en/de/unit/<text> (TM lookup only; its baseline is v1
            with "translate": false)

and prints p50/p95/mean latency per call, each protocol's median over v1's, and how many of its
translations equal /v1/suggest's text for the same segment (the protocols share its machinery, so
all should). Example:

  python bench/protocols_bench.py --catalogue /usr/share/locale/de/LC_MESSAGES/apt.mo --queries 60
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import requests
from local_server import LocalServer, catalogue_pairs

DEFAULT_CATALOGUE = Path("/usr/share/locale/de/LC_MESSAGES/apt.mo")
PROTOCOL_TRANSLATIONS = ("libre", "modernmt", "deepl")  # compared with v1's text


@dataclass
class Timings:
    ms: list[float] = field(default_factory=list)
    agree: int = 0
    errors: int = 0

    def row(self, name: str, baseline: float | None, translates: bool) -> str:
        p50 = statistics.median(self.ms)
        p95 = sorted(self.ms)[max(0, int(round(0.95 * len(self.ms))) - 1)]
        ratio = f"{p50 / baseline:.2f}" if baseline else "(baseline)"
        agree = str(self.agree) if translates else "-"
        return (
            f"| {name} | {len(self.ms)} | {p50:.1f} | {p95:.1f} | "
            f"{statistics.fmean(self.ms):.1f} | {ratio} | {agree} | {self.errors} |"
        )


def calls(base: str, token: str) -> dict[str, Callable[[str], str]]:
    bearer = {"Authorization": f"Bearer {token}"}

    def v1(text: str, translate: bool = True) -> str:
        body = {"source": text, "memories": ["bench"], "options": {"translate": translate}}
        reply = requests.post(base + "/v1/suggest", json=body, headers=bearer, timeout=120)
        reply.raise_for_status()
        translation = reply.json()["results"][0]["translation"]
        return translation["text"] if translation else ""

    def libre(text: str) -> str:
        body = {"q": text, "source": "en", "target": "de", "api_key": token}
        reply = requests.post(base + "/libretranslate/translate", json=body, timeout=120)
        reply.raise_for_status()
        return str(reply.json()["translatedText"])

    def modernmt(text: str) -> str:
        reply = requests.get(
            base + "/modernmt/translate",
            params={"q": text, "source": "en", "target": "de"},
            headers={"MMT-ApiKey": token},
            timeout=120,
        )
        reply.raise_for_status()
        return str(reply.json()["data"]["translation"])

    def deepl(text: str) -> str:
        reply = requests.post(
            base + "/deepl/v2/translate",
            json={"text": [text], "source_lang": "EN", "target_lang": "DE"},
            headers={"Authorization": f"DeepL-Auth-Key {token}"},
            timeout=120,
        )
        reply.raise_for_status()
        return str(reply.json()["translations"][0]["text"])

    def tmserver(text: str) -> str:
        url = f"{base}/tmserver/key/{token}/en/de/unit/{quote(text[:500], safe='')}"
        reply = requests.get(url, timeout=120)
        reply.raise_for_status()
        return ""

    return {
        "v1": v1,
        "libre": libre,
        "modernmt": modernmt,
        "deepl": deepl,
        "v1 matches only": lambda text: v1(text, translate=False),
        "tmserver": tmserver,
    }


def measure(base: str, token: str, queries: list[str]) -> dict[str, Timings]:
    functions = calls(base, token)
    names = list(functions)
    results = {name: Timings() for name in names}
    for i, text in enumerate(queries):
        order = names[i % len(names) :] + names[: i % len(names)]
        outputs: dict[str, str] = {}
        for name in order:
            started = time.perf_counter()
            try:
                outputs[name] = functions[name](text)
            except requests.RequestException:
                results[name].errors += 1
                continue
            results[name].ms.append((time.perf_counter() - started) * 1000)
        for name in PROTOCOL_TRANSLATIONS:
            if name in outputs and outputs[name] == outputs.get("v1"):
                results[name].agree += 1
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalogue", type=Path, default=DEFAULT_CATALOGUE)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model", help="model bundle (default: the bundled demo model)")
    args = parser.parse_args(argv)

    pairs = catalogue_pairs([args.catalogue])
    random.Random(args.seed).shuffle(pairs)
    held_out, tm = pairs[: args.queries], pairs[args.queries :]
    with tempfile.TemporaryDirectory(prefix="protocols-bench-") as tmp:
        server = LocalServer(Path(tmp), model=args.model, threads=4)
        try:
            server.import_pairs("bench", tm)
            token = server.cli("keys", "create", "bench", "--scope", "bench:read").split()[-1]
            calls(server.base, token)["v1"]("warm up")
            results = measure(server.base, token, [s for s, _ in held_out])
        finally:
            server.stop()
    print(f"{args.catalogue.name}: TM {len(tm)} pairs, {len(held_out)} held-out queries\n")
    print("| call | n | p50 ms | p95 ms | mean ms | p50 / baseline | same text as v1 | errors |")
    print("|---|---|---|---|---|---|---|---|")
    v1 = statistics.median(results["v1"].ms)
    lookup = statistics.median(results["v1 matches only"].ms)
    for name, timings in results.items():
        baseline = lookup if name == "tmserver" else (None if name.startswith("v1") else v1)
        print(timings.row(name, baseline, translates=name in PROTOCOL_TRANSLATIONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
