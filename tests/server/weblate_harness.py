"""Weblate's own machinery classes, taken from its published wheel, without the rest of Weblate.

The wheel (`weblate==WEBLATE_VERSION`) is fetched once per machine with `pip download --no-deps`
into the user's cache. The modules that speak to a service run unchanged from the wheel:
`weblate.machinery.{base,types,tmserver,libretranslate,modernmt,deepl}` (URL building, quoting,
language-code mapping, request headers, response parsing, error handling, threshold filtering,
placeholder cleanup, caching) and `weblate.utils.{requests,similarity}`.

What is stubbed, and why (each is Weblate's database, UI or deployment, not its client code):
- `weblate.lang.models.Language`: a code-only object (Weblate's is a Django model);
  `PluralMapper` is never reached by the calls the tests make. A unit (`unit()`) carries only
  its translation's languages and component, which is what these paths read of it.
- `weblate.checks.utils.highlight_string`: Weblate finds placeholders through its checks
  registry and the unit's flags; the stub marks printf (`%s`, `%(name)s`) and brace (`{name}`)
  placeholders, so services with `highlight_syntax` (DeepL) still send them as `<x id=.../>`.
- `weblate.machinery.forms`: the admin forms (settings are passed as a dict here).
- `weblate.utils.{errors,site,version,hash}` and `weblate.logger`: error reporting to Sentry,
  the site URL, version strings, and siphash cache keys (hashlib here).
- `weblate.glossary.models.get_glossary_tsv`: the project's glossary from the database; here
  there is none (the glossary upload itself is tested with DeepL's and ModernMT's own routes).
- `weblate/__init__` and `weblate/utils/__init__` are empty packages (the real ones start
  Celery).
Django itself is real, configured with a local-memory cache, which the classes use for rate
limits, language lists and translations.

The tests call the layer just under `translate(unit, ...)`: `get_languages()` (the language
negotiation that decides whether a service is asked at all, with its `download_languages` call)
and `_translate()` (cleanup, cache, `download_multiple_translations`, error wrapping), which is
what `translate()` does once it has a unit; and `validate_settings()`, what Weblate runs when an
administrator saves a service's settings.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import subprocess
import sys
import tempfile
import types
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WEBLATE_VERSION = "5.14.3"
WHEEL = f"weblate-{WEBLATE_VERSION}-py3-none-any.whl"
REAL_MODULES = (
    "weblate.utils.requests",
    "weblate.utils.similarity",
    "weblate.machinery.types",
    "weblate.machinery.base",
    "weblate.machinery.tmserver",
    "weblate.machinery.libretranslate",
    "weblate.machinery.modernmt",
    "weblate.machinery.deepl",
)
PACKAGES = (
    "weblate",
    "weblate.utils",
    "weblate.lang",
    "weblate.checks",
    "weblate.machinery",
    "weblate.glossary",
)
_PLACEHOLDER = re.compile(r"%(?:\([^)]+\))?[-+ #0]*\d*(?:\.\d+)?[sdifr%]|\{[A-Za-z_][\w.]*\}")
reported_errors: list[str] = []


def wheel_path(cache: Path) -> Path:
    """The Weblate wheel, downloaded once into `cache` (PyPI must be reachable the first time)."""
    wheel = cache / WHEEL
    if not wheel.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        # into a folder of its own, then renamed: test processes running side by side (xdist)
        # may download it at once, and none may read a half-written wheel
        with tempfile.TemporaryDirectory(dir=cache) as partial:
            command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", partial]
            done = subprocess.run(
                [*command, f"weblate=={WEBLATE_VERSION}"], capture_output=True, text=True
            )
            downloaded = Path(partial) / WHEEL
            if done.returncode != 0 or not downloaded.is_file():
                raise RuntimeError(
                    f"could not download weblate=={WEBLATE_VERSION} from PyPI into {cache}:\n"
                    f"{done.stderr[-2000:]}"
                )
            os.replace(downloaded, wheel)
    return wheel


@dataclass(frozen=True)
class Language:
    """Weblate's Language model reduced to what the machinery reads: its code."""

    code: str


def unit(source_code: str = "en", target_code: str = "de") -> types.SimpleNamespace:
    """What the machinery reads of a Weblate unit on these paths: its translation's languages and
    component (for glossary lookups and debug logs)."""
    component = types.SimpleNamespace(project=None, source_language=Language(source_code))
    translation = types.SimpleNamespace(
        component=component, language=Language(target_code), log_debug=lambda *args: None
    )
    return types.SimpleNamespace(translation=translation)


def _highlight_string(text: str, unit: Any, highlight_syntax: bool = False) -> list[Any]:
    return [(m.start(), m.end(), m.group()) for m in _PLACEHOLDER.finditer(text)]


def _hash(*parts: Any) -> int:
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _form(name: str) -> type:
    return type(name, (), {"__doc__": "stand-in for Weblate's settings form"})


def _stubs() -> dict[str, dict[str, Any]]:
    return {
        "weblate.lang.models": {"Language": Language, "PluralMapper": object},
        "weblate.checks.utils": {"highlight_string": _highlight_string},
        "weblate.utils.errors": {
            "report_error": lambda cause, **_: reported_errors.append(str(cause))
        },
        "weblate.utils.site": {"get_site_url": lambda *_: "http://weblate.invalid"},
        "weblate.utils.version": {
            "VERSION": WEBLATE_VERSION,
            "USER_AGENT": f"Weblate/{WEBLATE_VERSION}",
        },
        "weblate.utils.hash": {
            "calculate_hash": _hash,
            "calculate_dict_hash": lambda data: _hash(sorted(data.items())),
            "hash_to_checksum": lambda value: f"{value & (2**64 - 1):016x}",
        },
        "weblate.logger": {"LOGGER": logging.getLogger("weblate")},
        "weblate.glossary.models": {"get_glossary_tsv": lambda translation: ""},
        "weblate.machinery.forms": {
            name: _form(name)
            for name in (
                "BaseMachineryForm",
                "URLMachineryForm",
                "KeyURLMachineryForm",
                "LibreTranslateMachineryForm",
                "ModernMTMachineryForm",
                "DeepLMachineryForm",
            )
        },
    }


def _configure_django() -> None:
    from django.conf import settings

    if not settings.configured:
        settings.configure(
            USE_I18N=False,
            CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
        )
        import django

        django.setup()


def load(cache: Path) -> types.SimpleNamespace:
    """Weblate's machinery modules, loaded from the wheel (see the module docstring)."""
    if "weblate.machinery.deepl" in sys.modules:
        return _namespace()
    _configure_django()
    archive = zipfile.ZipFile(wheel_path(cache))
    for name in PACKAGES:
        package = types.ModuleType(name)
        package.__path__ = []
        _install(name, package)
    for name, attributes in _stubs().items():
        module = types.ModuleType(name)
        module.__dict__.update(attributes)
        _install(name, module)
    for name in REAL_MODULES:
        path = name.replace(".", "/") + ".py"
        module = types.ModuleType(name)
        module.__file__ = f"{archive.filename}/{path}"
        module.__package__ = name.rsplit(".", 1)[0]
        _install(name, module)
        code = compile(archive.read(path).decode("utf-8"), module.__file__, "exec")
        exec(code, module.__dict__)  # noqa: S102 - the wheel's own source, run as its import would
    return _namespace()


def _install(name: str, module: types.ModuleType) -> None:
    """Register `module` as `name`, and as an attribute of its parent as an import would."""
    sys.modules[name] = module
    parent, _, leaf = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], leaf, module)


def _namespace() -> types.SimpleNamespace:
    base = sys.modules["weblate.machinery.base"]
    return types.SimpleNamespace(
        TMServer=sys.modules["weblate.machinery.tmserver"].TMServerTranslation,
        LibreTranslate=sys.modules["weblate.machinery.libretranslate"].LibreTranslateTranslation,
        ModernMT=sys.modules["weblate.machinery.modernmt"].ModernMTTranslation,
        DeepL=sys.modules["weblate.machinery.deepl"].DeepLTranslation,
        MachineTranslationError=base.MachineTranslationError,
        Language=Language,
    )


def clear_cache() -> None:
    """Forget cached languages, translations and rate limits between tests."""
    from django.core.cache import cache

    cache.clear()
    reported_errors.clear()
