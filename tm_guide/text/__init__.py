"""Text around the model: what CAT tools send, cut into what a sentence model translates."""

from tm_guide.text.layout import Layout, layout_of

__all__ = ["Layout", "layout_of"]
