"""Model bundles: loading and verifying them, converting checkpoints, exporting archives."""

from tm_guide.model.bundle import Bundle
from tm_guide.model.card import Metrics, ModelCard

__all__ = ["Bundle", "Metrics", "ModelCard"]
