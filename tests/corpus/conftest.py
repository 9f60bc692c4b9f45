"""The corpus builder lives in bench/corpus/ (a script folder, not a package)."""

from __future__ import annotations

import sys
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parents[2] / "bench" / "corpus"
if str(CORPUS_DIR) not in sys.path:
    sys.path.insert(0, str(CORPUS_DIR))
