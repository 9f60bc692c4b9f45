"""Full-text retrieval of similar TM source sentences, behind a small interface."""

from tm_guide.index.base import IndexChange, IndexDoc, IndexOptions, MemoryKey, SourceIndex
from tm_guide.index.terms import index_terms
from tm_guide.index.whoosh_index import WhooshIndex

__all__ = [
    "IndexChange",
    "IndexDoc",
    "IndexOptions",
    "MemoryKey",
    "SourceIndex",
    "WhooshIndex",
    "index_terms",
]
