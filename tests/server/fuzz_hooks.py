"""schemathesis hooks for tests/server/schemathesis.toml: what OpenAPI 3.0 cannot declare.

- A TMX prop's name cannot hold a character XML 1.0 forbids, and the server refuses such a name
  (400, naming the field); OpenAPI 3.0 has no `propertyNames`.
- /v1/suggest names each memory once, as a string or as {name, penalty}; `uniqueItems` cannot see
  that "a" and {"name": "a"} are the same memory.

The document says both in words; the generator is kept from such bodies here.
"""

from __future__ import annotations

import re
from typing import Any

import schemathesis

_XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@schemathesis.hook
def filter_body(context: Any, body: Any) -> bool:
    if not isinstance(body, dict):
        return True
    props = body.get("props")
    if isinstance(props, dict) and any(_XML_FORBIDDEN.search(name) for name in props):
        return False
    memories = body.get("memories")
    if isinstance(memories, list):
        names = [m.get("name") if isinstance(m, dict) else m for m in memories]
        if len(names) != len(set(map(repr, names))):
            return False
    return True
