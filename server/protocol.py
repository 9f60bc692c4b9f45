"""The contract of a CAT-tool protocol front-end: tmserver, LibreTranslate, ModernMT, DeepL.

Each protocol is a Protocol subclass, as each of Weblate's machinery services is a
`MachineTranslation` subclass: it says its name (as TM_GUIDE_PROTOCOLS spells it), its routes
(a blueprint under its own URL prefix), the error JSON its clients parse, and what else it
needs in the app. What its routes translate goes through `machine_translation.translate_texts`,
which answers with typed Suggestions (tm_guide.server.results) that the route maps to the
vendor's shape. The app factory registers the protocols the configuration serves from
`server.api.protocols.FRONT_ENDS`, and nothing else looks a protocol up by name.
"""

from __future__ import annotations

from typing import Any, ClassVar

from flask import Blueprint, Flask

from tm_guide.server.errors import default_body, register_error_body


class Protocol:
    """One protocol: `name` and `blueprint` are set by each subclass."""

    name: ClassVar[str]
    blueprint: ClassVar[Blueprint]

    def error_body(
        self, status: int, code: str, message: str, field: str | None
    ) -> tuple[int, Any]:
        """The status and JSON body of an error under this protocol's prefix, as its clients
        parse them (default: /v1's)."""
        return default_body(status, code, message, field)

    def setup(self, app: Flask) -> None:
        """What the protocol needs in the app besides its routes (none by default)."""

    def register(self, app: Flask) -> None:
        app.register_blueprint(self.blueprint)
        register_error_body(app, self.blueprint.url_prefix or "/", self.error_body)
        self.setup(app)
