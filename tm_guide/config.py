"""Settings shared by the CLI, the server and the Docker files, each from one environment
variable."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from tm_guide.errors import InvalidInput

DEFAULT_DB_URL = "sqlite:///tm-guide.sqlite"
BUNDLED_MODEL = Path(__file__).parent / "models" / "demo-en-de"


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, default).strip()
    return value or default


@dataclass(frozen=True)
class Settings:
    """Where the database, the search index and the model bundle live.

    TM_GUIDE_DB         SQLAlchemy URL (sqlite:///file.sqlite or postgresql+psycopg://...)
    TM_GUIDE_INDEX_DIR  directory of the full-text index (default: next to an SQLite file,
                        else ./tm-guide-index)
    TM_GUIDE_MODEL      model bundle directory or archive (default: the bundled demo model)
    TM_GUIDE_DEVICE     cpu, cuda or auto
    """

    db_url: str = DEFAULT_DB_URL
    index_dir: Path = field(default_factory=lambda: Path("tm-guide-index"))
    model_path: Path = BUNDLED_MODEL
    device: str = "cpu"

    @classmethod
    def from_env(cls, db_url: str | None = None) -> Settings:
        url = db_url or _env("TM_GUIDE_DB", DEFAULT_DB_URL)
        index_dir = os.environ.get("TM_GUIDE_INDEX_DIR", "").strip()
        device = _env("TM_GUIDE_DEVICE", "cpu")
        if device not in ("cpu", "cuda", "auto"):
            raise InvalidInput(
                f"TM_GUIDE_DEVICE must be cpu, cuda or auto, not {device!r}",
                field="TM_GUIDE_DEVICE",
            )
        return cls(
            db_url=url,
            index_dir=Path(index_dir) if index_dir else default_index_dir(url),
            model_path=Path(_env("TM_GUIDE_MODEL", str(BUNDLED_MODEL))),
            device=device,
        )


def default_index_dir(db_url: str) -> Path:
    """An SQLite file keeps its index beside it, so that the two travel together."""
    prefix = "sqlite:///"
    if db_url.startswith(prefix) and db_url[len(prefix) :] not in ("", ":memory:"):
        db_path = Path(db_url[len(prefix) :])
        return db_path.with_name(db_path.name + ".index")
    return Path("tm-guide-index")
