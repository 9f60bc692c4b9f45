"""POST /v1/suggest: fuzzy matches and TM-guided MT for one segment or a batch."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify

from tm_guide import languages
from tm_guide.errors import InvalidInput, NotFound
from tm_guide.pieces.weighting import PieceWeighting
from tm_guide.server.api.common import services
from tm_guide.server.auth import current_principal, require
from tm_guide.server.config import MAX_LAMBDA
from tm_guide.server.suggestions import MemoryChoice, SegmentQuery, SuggestOptions, suggest
from tm_guide.server.translation import MTOptions
from tm_guide.server.validation import get_field, in_range, json_body, reject_unknown, text_field

blueprint = Blueprint("suggest", __name__, url_prefix="/v1")

BODY_FIELDS = frozenset(
    {"source", "context", "segments", "memories", "source_lang", "target_lang", "options"}
)
SEGMENT_FIELDS = frozenset({"source", "context"})
OPTION_FIELDS = frozenset(
    {
        "translate",
        "unguided",
        "exact_match_target",
        "m",
        "lambda",
        "beam_size",
        "min_similarity",
        "binary_reward",
        "reward_repeats",
        "clipped",
        "weighting",
        "min_match",
        "max_matches",
    }
)


@blueprint.post("/suggest")
def suggest_view() -> Response:
    body = json_body()
    reject_unknown(body, BODY_FIELDS)
    queries = _queries(body)
    options = _options(body)
    for choice in options.memories:
        require(choice.name, "read")
    return jsonify(suggest(services(), queries, options))


def _queries(body: dict[str, Any]) -> list[SegmentQuery]:
    """Either `source` (+ `context`) for one segment or `segments: [{source, context}]`."""
    limits = services().config.limits
    if "segments" in body and "source" in body:
        raise InvalidInput("give either 'source' or 'segments', not both", field="segments")
    if "segments" in body and body.get("context") is not None:
        raise InvalidInput(
            "with 'segments', each segment carries its own 'context'", field="context"
        )
    if "segments" not in body:
        return [
            SegmentQuery(
                text_field(body, "source", limits.max_segment_chars) or "",
                text_field(body, "context", limits.max_segment_chars, required=False),
            )
        ]
    items = get_field(body, "segments", list, required=True)
    if not items:
        raise InvalidInput("field 'segments' must not be empty", field="segments")
    if len(items) > limits.max_batch_size:
        raise InvalidInput(
            f"field 'segments' has {len(items)} items; the limit is {limits.max_batch_size}",
            field="segments",
        )
    queries = []
    for i, item in enumerate(items):
        path = f"segments[{i}]."
        if isinstance(item, str):
            item = {"source": item}
        if not isinstance(item, dict):
            raise InvalidInput(
                f"field 'segments[{i}]' must be an object or a string", field=f"segments[{i}]"
            )
        reject_unknown(item, SEGMENT_FIELDS, path=path)
        queries.append(
            SegmentQuery(
                text_field(item, "source", limits.max_segment_chars, path=path) or "",
                text_field(item, "context", limits.max_segment_chars, path=path, required=False),
            )
        )
    return queries


def _memories(body: dict[str, Any]) -> tuple[MemoryChoice, ...]:
    """`memories: ["name", {"name": "other", "penalty": 5}]`; without it every memory the key may
    read in `source_lang` -> `target_lang`."""
    items = get_field(body, "memories", list)
    source_lang = get_field(body, "source_lang", str)
    target_lang = get_field(body, "target_lang", str)
    for field, tag in (("source_lang", source_lang), ("target_lang", target_lang)):
        if tag is not None:  # a language tag even where the memories are named
            languages.normalize(tag, field=field)
    if items is None:
        if not (source_lang and target_lang):
            raise InvalidInput(
                "field 'memories' is required (or 'source_lang' and 'target_lang' "
                "to use every readable memory of that pair)",
                field="memories",
            )
        principal = current_principal()
        chosen = tuple(
            MemoryChoice(m.name)
            for m in services().store().list_memories()
            if languages.pair_matches((m.source_lang, m.target_lang), (source_lang, target_lang))
            and principal.allows(m.name, "read")
        )
        if not chosen:
            raise NotFound(
                f"no readable memory translates {source_lang} -> {target_lang}", field="memories"
            )
        return chosen
    if not items:
        raise InvalidInput("field 'memories' must not be empty", field="memories")
    choices = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            choices.append(MemoryChoice(item))
            continue
        if not isinstance(item, dict):
            raise InvalidInput(
                f"field 'memories[{i}]' must be a name or an object", field=f"memories[{i}]"
            )
        path = f"memories[{i}]."
        name = get_field(item, "name", str, path=path, required=True)
        penalty = get_field(item, "penalty", int, path=path, default=0)
        choices.append(MemoryChoice(name, int(in_range(penalty, 0, 100, f"{path}penalty"))))
    if len({c.name for c in choices}) != len(choices):
        raise InvalidInput("field 'memories' names a memory twice", field="memories")
    return tuple(choices)


def _options(body: dict[str, Any]) -> SuggestOptions:
    limits = services().config.limits
    opts = get_field(body, "options", dict, default={})
    path = "options."
    reject_unknown(opts, OPTION_FIELDS, path=path)
    m = get_field(opts, "m", int, path=path, default=10)
    min_match = get_field(opts, "min_match", int, path=path, default=50)
    max_matches = get_field(opts, "max_matches", int, path=path, default=5)
    lam = get_field(opts, "lambda", float, path=path)
    beam_size = get_field(opts, "beam_size", int, path=path)
    min_similarity = get_field(opts, "min_similarity", float, path=path)
    if lam is not None:
        in_range(lam, 0.0, MAX_LAMBDA, "options.lambda")
    if beam_size is not None:
        in_range(beam_size, 1, limits.max_beam_size, "options.beam_size")
    if min_similarity is not None:
        in_range(min_similarity, 0.0, 1.0, "options.min_similarity")
    weighting = get_field(opts, "weighting", str, path=path)
    if weighting is not None:
        try:
            PieceWeighting.parse(weighting)
        except InvalidInput as exc:
            raise InvalidInput(exc.message, field="options.weighting") from None
    return SuggestOptions(
        memories=_memories(body),
        m=int(in_range(m, 1, limits.max_m, "options.m")),
        min_match=int(in_range(min_match, 0, 101, "options.min_match")),
        max_matches=int(in_range(max_matches, 0, 100, "options.max_matches")),
        translate=get_field(opts, "translate", bool, path=path, default=True),
        exact_match_target=get_field(opts, "exact_match_target", bool, path=path, default=True),
        mt=MTOptions(
            lam=lam,
            beam_size=beam_size,
            min_similarity=min_similarity,
            binary_reward=get_field(opts, "binary_reward", bool, path=path, default=False),
            reward_repeats=get_field(opts, "reward_repeats", bool, path=path),
            clipped=get_field(opts, "clipped", bool, path=path),
            weighting=weighting,
            unguided=get_field(opts, "unguided", bool, path=path, default=False),
        ),
    )
