"""What the blueprints share: the app's services (JSON shapes are in server/shapes.py)."""

from __future__ import annotations

from flask import current_app

from tm_guide.server.services import Services


def services() -> Services:
    return current_app.extensions["tm_guide"]
