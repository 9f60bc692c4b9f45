"""POST /v1/suggest: fuzzy matches and TM-guided MT for one segment or a batch."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from flask import Blueprint, Response, jsonify

from tm_guide import languages
from tm_guide.errors import InvalidInput, NotFound
from tm_guide.pieces.choice import ChoiceOptions
from tm_guide.pieces.repair import RepairOptions
from tm_guide.pieces.weighting import PieceWeighting
from tm_guide.server.api.common import services
from tm_guide.server.auth import current_principal, require
from tm_guide.server.document import request_body
from tm_guide.server.suggestions import MemoryChoice, SegmentQuery, SuggestOptions, suggest
from tm_guide.server.translation import MTOptions

blueprint = Blueprint("suggest", __name__, url_prefix="/v1")


@blueprint.post("/suggest")
def suggest_view() -> Response:
    body = request_body()
    queries = _queries(body)
    options = _options(body)
    for name in (*(choice.name for choice in options.memories), *options.glossaries):
        require(str(name), "read")
    return jsonify(suggest(services(), queries, options).to_json())


def _queries(body: dict[str, Any]) -> list[SegmentQuery]:
    """Either `source` (+ `context`) for one segment or `segments: [{source, context}]` (the
    document's SuggestRequest says which combinations are allowed)."""
    if "segments" not in body:
        return [SegmentQuery(body["source"], body.get("context"))]
    return [
        SegmentQuery(item, None)
        if isinstance(item, str)
        else SegmentQuery(item["source"], item.get("context"))
        for item in body["segments"]
    ]


def _memories(body: dict[str, Any]) -> tuple[MemoryChoice, ...]:
    """`memories: ["name", {"name": "other", "penalty": 5}]`; without it every memory the key may
    read in `source_lang` -> `target_lang`."""
    source_lang, target_lang = body.get("source_lang"), body.get("target_lang")
    for field, tag in (("source_lang", source_lang), ("target_lang", target_lang)):
        if tag is not None:  # a tag of a known language, even where the memories are named
            languages.normalize(tag, field=field)
    if body.get("memories") is None:
        principal = current_principal()
        chosen = tuple(
            MemoryChoice(m.name)
            for m in services().store().list_memories()
            if languages.pair_matches(
                (m.source_lang, m.target_lang), (source_lang or "", target_lang or "")
            )
            and principal.allows(m.name, "read")
        )
        if not chosen:
            raise NotFound(
                f"no readable memory translates {source_lang} -> {target_lang}", field="memories"
            )
        return chosen
    choices = tuple(
        MemoryChoice(item)
        if isinstance(item, str)
        else MemoryChoice(item["name"], item.get("penalty") or 0)
        for item in body["memories"]
    )
    if len({c.name for c in choices}) != len(choices):
        raise InvalidInput("field 'memories' names a memory twice", field="memories")
    return choices


def _given(options: dict[str, Any]) -> dict[str, Any]:
    """The options the client set: a null or missing option keeps its default."""
    return {key: value for key, value in options.items() if value is not None}


def _options(body: dict[str, Any]) -> SuggestOptions:
    options = _given(body.get("options") or {})
    # the document checks their spelling, the parsers their numbers
    parsers = (
        ("weighting", PieceWeighting.parse),
        ("repair", RepairOptions.parse),
        ("choice", ChoiceOptions.parse),
    )
    for name, parse in parsers:
        if options.get(name) is not None:
            try:
                parse(options[name])
            except InvalidInput as exc:
                raise InvalidInput(exc.message, field=f"options.{name}") from None
    mt_names = {"lambda": "lam", **{f.name: f.name for f in fields(MTOptions)}}
    mt = {mt_names[k]: v for k, v in options.items() if k in mt_names}
    rest = {k: v for k, v in options.items() if k not in mt_names}
    return SuggestOptions(
        memories=_memories(body),
        mt=MTOptions(**mt),
        glossaries=tuple(body.get("glossaries") or ()),
        **rest,
    )
