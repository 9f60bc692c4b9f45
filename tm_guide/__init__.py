"""tm-guide: translation-memory guided neural machine translation."""

__version__ = "0.1.0"
