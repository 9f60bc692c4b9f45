"""Translation-memory storage (SQLAlchemy, SQLite or PostgreSQL) with a full-text index in step."""

from tm_guide.store.store import IndexState, Store, StoreOptions, check_memory_fields
from tm_guide.store.types import ApiKey, ImportReport, Memory, SearchHit, Segment, SegmentAnalysis

__all__ = [
    "ApiKey",
    "ImportReport",
    "IndexState",
    "Memory",
    "SearchHit",
    "Segment",
    "SegmentAnalysis",
    "Store",
    "StoreOptions",
    "check_memory_fields",
]
