"""Opening the store from the global --db option, with an error a shell user can act on."""

from __future__ import annotations

import argparse

from tm_guide.config import Settings
from tm_guide.errors import TMGuideError


def open_store(args: argparse.Namespace, repair_index: bool = True):  # type: ignore[no-untyped-def]
    """The store named by --db (or $TM_GUIDE_DB), migrated to the current schema."""
    from sqlalchemy.exc import OperationalError

    from tm_guide.store import Store, StoreOptions

    settings = Settings.from_env(getattr(args, "db", None))
    try:
        return Store.open(
            settings.db_url,
            settings.index_dir,
            StoreOptions(repair_index_on_open=repair_index),
        )
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise TMGuideError(f"cannot open database {settings.db_url}: {reason}") from exc
