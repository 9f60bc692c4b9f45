"""Guided decoding: beam search with translation-piece rewards (paper section 3.2), engines."""
