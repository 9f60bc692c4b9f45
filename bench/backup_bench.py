"""Backup by TMX export: time, peak memory and a faithful re-import, at several memory sizes.

    python bench/backup_bench.py [--sizes 100000,1000000] [--work DIR]

For each size: a memory of synthetic pairs (bench/store_bench.py's seeded corpus) is imported into
a fresh SQLite store, `tm-guide export` writes it to TMX in a child process (its peak resident
memory as GNU time reports it), and `tm-guide import` reads the file
into a second memory. The table shows whether the export streams (peak memory flat across sizes)
and whether the copy holds the same number of segments.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from store_bench import Corpus  # noqa: E402

from tm_guide.records import SegmentRecord  # noqa: E402
from tm_guide.store import Store  # noqa: E402


def child_peak_mib(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds and peak resident MiB of one child process, as GNU time reports it (the rusage of
    a forked child also counts the parent's pages it shared before exec, and this parent holds a
    large store)."""
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *command], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    work = args.work or Path(tempfile.mkdtemp(prefix="tm-guide-backup-"))
    rows = []
    for size in sorted(sizes):
        folder = work / str(size)
        folder.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "TM_GUIDE_DB": f"sqlite:///{folder / 'tm.sqlite'}",
            "TM_GUIDE_INDEX_DIR": str(folder / "index"),
        }
        store = Store.open(env["TM_GUIDE_DB"], index_dir=env["TM_GUIDE_INDEX_DIR"])
        memory = store.create_memory("original", "en", "de")
        started = time.perf_counter()
        store.import_records(
            memory,
            (SegmentRecord(source=s, target=t) for s, t in Corpus().sentences(size)),
        )
        imported_s = time.perf_counter() - started
        stored = store.get_memory("original").segment_count
        store.close()
        cli = [sys.executable, "-m", "tm_guide"]
        tmx = folder / "backup.tmx"
        export_s, export_mib = child_peak_mib([*cli, "export", "original", str(tmx)], env)
        subprocess.run([*cli, "memory", "create", "copy", "en", "de"], env=env, check=True)
        restore_s, _ = child_peak_mib([*cli, "import", "copy", str(tmx), "--quiet"], env)
        store = Store.open(env["TM_GUIDE_DB"], index_dir=env["TM_GUIDE_INDEX_DIR"])
        copied = store.get_memory("copy").segment_count
        store.close()
        rows.append(
            (size, stored, imported_s, export_s, export_mib, tmx.stat().st_size, restore_s, copied)
        )
    print(f"SQLite, {os.cpu_count()} CPUs; work directory {work}")
    print(
        f"{'segments':>10}{'stored':>10}{'import s':>10}{'export s':>10}{'export peak MiB':>17}"
        f"{'TMX MiB':>9}{'re-import s':>13}{'copy holds':>12}"
    )
    for size, stored, imported_s, export_s, mib, tmx_bytes, restore_s, copied in rows:
        print(
            f"{size:>10,}{stored:>10,}{imported_s:>10.1f}{export_s:>10.1f}{mib:>17.0f}"
            f"{tmx_bytes / 2**20:>9.0f}{restore_s:>13.1f}{copied:>12,}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
