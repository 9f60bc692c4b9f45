"""The search's per-step rules applied on the torch engine's device, and its top-k taken there.

tm_guide.decoding.candidates says why and what; this is the torch side. Every operation is one
the host search does too, in the same float32 order (the reward added to the masked
log-probability, then the row's cumulative score added), so the candidates are the host's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tm_guide.decoding.candidates import PAD, CandidateRequest, Candidates
from tm_guide.decoding.template import OPEN_WORD, WORD, WORD_START
from tm_guide.decoding.utf8 import LAST, OWED, Utf8Rule

_LOW32 = (1 << 32) - 1


@dataclass
class DeviceTables:
    """What the rules read at every step, kept on the device: the UTF-8 rule's vectors and the
    templates' word marks, uploaded once per rule and per table."""

    device: torch.device
    _utf8: tuple[Utf8Rule, torch.Tensor, torch.Tensor, torch.Tensor] | None = None
    _marks: tuple[tuple[np.ndarray, ...], torch.Tensor] | None = field(default=None)

    def utf8(self, rule: Utf8Rule) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(byte of each id or -1, denied ids' mask, denied-on-the-last-step mask)."""
        if self._utf8 is None or self._utf8[0] is not rule:
            vocab = len(rule.byte_of_id)
            plain = torch.zeros(vocab, dtype=torch.bool)
            plain[torch.from_numpy(rule.denied(False))] = True
            last = torch.zeros(vocab, dtype=torch.bool)
            last[torch.from_numpy(rule.denied(True))] = True
            self._utf8 = (
                rule,
                torch.from_numpy(rule.byte_of_id).to(self.device),
                plain.to(self.device),
                last.to(self.device),
            )
        return self._utf8[1], self._utf8[2], self._utf8[3]

    def marks(self, tables: tuple[np.ndarray, ...]) -> torch.Tensor:
        """The word-mark tables stacked [tables, vocab] (int64)."""
        if (
            self._marks is None
            or len(self._marks[0]) != len(tables)
            or any(a is not b for a, b in zip(self._marks[0], tables, strict=True))
        ):
            stacked = torch.from_numpy(np.stack([t.astype(np.int64) for t in tables]))
            self._marks = (tables, stacked.to(self.device))
        return self._marks[1]


@dataclass(frozen=True)
class Uploaded:
    """A CandidateRequest's arrays on the device. They are sent before the step is queued: a
    copy from pageable host memory waits for the stream, so sent after it, each would wait for
    the model's whole step instead of running ahead of it."""

    k: int
    groups: int
    cum: torch.Tensor
    reward_keys: torch.Tensor | None
    reward_values: torch.Tensor | None
    # the template rule: allowed classes, denied and allowed ids (vocab = none), word marks
    classes: torch.Tensor | None = None
    deny: torch.Tensor | None = None
    allow: torch.Tensor | None = None
    codes_of_row: torch.Tensor | None = None
    marks: torch.Tensor | None = None
    # the rows whose class WORD holds only while the model holds its word open (OPEN_WORD),
    # found on the host, so that the device neither syncs to find them nor sums other rows
    opening_rows: torch.Tensor | None = None
    end: int = -1  # </s>, left out of those rows' sums (template.word_open)
    # the UTF-8 rule: mode, lowest and highest byte per row, and the rule's vectors
    utf8_mode: torch.Tensor | None = None
    utf8_low: torch.Tensor | None = None
    utf8_high: torch.Tensor | None = None
    utf8_tables: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None


def upload(request: CandidateRequest, tables: DeviceTables, vocab: int) -> Uploaded:
    """The request's arrays on the device (see Uploaded)."""
    device = tables.device

    def on(array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)

    keys = values = None
    if len(request.reward_keys):
        keys, values = on(request.reward_keys), on(request.reward_values)
    fields: dict[str, object] = {}
    masks = request.masks
    if masks is not None and masks.uses_templates:
        fields["classes"] = on(masks.classes)[:, None]
        if masks.deny.size:  # PAD lands in an extra column that is dropped
            fields["deny"] = on(np.where(masks.deny == PAD, vocab, masks.deny))
        if masks.allow.size:
            fields["allow"] = on(np.where(masks.allow == PAD, vocab, masks.allow))
        if masks.marks:
            fields["marks"] = tables.marks(masks.marks)
            fields["codes_of_row"] = on(masks.marks_of_row)
        opening = np.flatnonzero((masks.classes >> OPEN_WORD) & 1)
        if opening.size:
            fields["opening_rows"] = on(opening)
            fields["end"] = masks.end
    if masks is not None and masks.utf8 is not None and bool((masks.utf8_mode != 0).any()):
        fields["utf8_mode"] = on(masks.utf8_mode)[:, None]
        fields["utf8_low"] = on(masks.utf8_low)[:, None]
        fields["utf8_high"] = on(masks.utf8_high)[:, None]
        fields["utf8_tables"] = tables.utf8(masks.utf8)
    return Uploaded(
        request.k,
        request.groups,
        on(request.cum_scores),
        keys,
        values,
        **fields,  # type: ignore[arg-type]
    )


def apply_masks(log_probs: torch.Tensor, rules: Uploaded) -> None:
    """Set every token the template and UTF-8 rules forbid to -inf, in place [rows, vocab]."""
    allowed = _template_allowed(rules, log_probs)
    if rules.utf8_tables is not None:
        assert rules.utf8_mode is not None and rules.utf8_low is not None
        assert rules.utf8_high is not None
        byte_of_id, plain, last = rules.utf8_tables
        mode = rules.utf8_mode
        owed_ok = (byte_of_id[None, :] >= rules.utf8_low) & (byte_of_id[None, :] <= rules.utf8_high)
        denied = torch.where(mode == LAST, last[None, :], plain[None, :])
        utf8_ok = torch.where(mode == OWED, owed_ok, ~denied | (mode == 0))
        allowed = utf8_ok if allowed is None else allowed & utf8_ok
    if allowed is not None:
        log_probs.masked_fill_(~allowed, -torch.inf)


def _template_allowed(rules: Uploaded, log_probs: torch.Tensor) -> torch.Tensor | None:
    """[rows, vocab] True where the template rule allows the token (by the row's
    log-probabilities where the rule holds a word open); None where no row has one."""
    if rules.classes is None:
        return None
    rows, vocab = log_probs.shape
    classes = rules.classes
    if rules.marks is not None and rules.codes_of_row is not None:
        codes = rules.marks[rules.codes_of_row]
        if rules.opening_rows is not None:
            # template.word_open on those rows: WORD only where the tokens that do not start a
            # word hold at least the probability of those that do, </s> left out
            rows_open = rules.opening_rows
            p = log_probs[rows_open].double().exp()
            if rules.end >= 0:
                p[:, rules.end] = 0.0
            starts = codes[rows_open] == WORD_START
            closed = torch.zeros_like(classes, dtype=torch.bool)
            closed[rows_open, 0] = (p * ~starts).sum(1) < (p * starts).sum(1)
            classes = torch.where(closed, classes & ~(1 << WORD), classes)
        allowed = ((classes >> codes) & 1).bool()
    else:
        allowed = (classes != 0).expand(rows, vocab)
    widened = torch.zeros(rows, vocab + 1, dtype=torch.bool, device=classes.device)
    widened[:, :vocab] = allowed
    if rules.deny is not None:
        widened.scatter_(1, rules.deny, False)
    if rules.allow is not None:
        widened.scatter_(1, rules.allow, True)
    return widened[:, :vocab]


def select(log_probs: torch.Tensor, rules: Uploaded) -> Candidates:
    """The k best candidates of each sentence (search.top_candidates' result, on the device);
    `log_probs` [rows, vocab] (float32) is masked in place. One copy comes back to the host."""
    apply_masks(log_probs, rules)
    flat = log_probs.view(-1)
    saved = None
    if rules.reward_keys is not None and rules.reward_values is not None:
        # the reward is added for the ranking only, and the rewarded cells put back after
        saved = flat[rules.reward_keys]
        flat[rules.reward_keys] = saved + rules.reward_values
    k, groups = rules.k, rules.groups
    totals = rules.cum[:, None] + log_probs
    if saved is not None:
        flat[rules.reward_keys] = saved
    values, index, tied = _top_k(totals, groups, k)
    packed = torch.cat(
        [
            values.double(),
            index.double(),  # exact: indices are below 2**53
            log_probs.reshape(groups, -1).gather(1, index).double(),
            log_probs[:, 0].reshape(groups, -1).double(),
            tied,
        ],
        dim=1,
    ).cpu()
    if bool(packed[:, -1].any()):
        rows_tied = packed[:, -1].nonzero().squeeze(1)
        some = totals.view(groups, -1)[rows_tied.to(totals.device)]
        exact_values, exact_index = _top_k_by_key(some, k)
        exact_lp = log_probs.reshape(groups, -1)[rows_tied.to(totals.device)]
        exact_lp = exact_lp.gather(1, exact_index)
        packed[rows_tied, :k] = exact_values.double().cpu()
        packed[rows_tied, k : 2 * k] = exact_index.double().cpu()
        packed[rows_tied, 2 * k : 3 * k] = exact_lp.double().cpu()
    host = packed.numpy()
    flat_index = host[:, k : 2 * k].astype(np.int64)
    totals_host = host[:, :k].astype(np.float32)
    lp_host = host[:, 2 * k : 3 * k].astype(np.float32)
    # best first, the lower index first among equal values (torch.topk promises neither)
    order = np.lexsort((flat_index, -totals_host), axis=1)
    return Candidates(
        flat=np.take_along_axis(flat_index, order, axis=1),
        totals=np.take_along_axis(totals_host, order, axis=1),
        log_probs=np.take_along_axis(lp_host, order, axis=1),
        first_column=host[:, 3 * k : -1].astype(np.float32).reshape(-1),
    )


def _top_k(
    totals: torch.Tensor, groups: int, k: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The k best of each group of rows ([groups, k] values and local row * vocab + token),
    and whether the group must be ranked again by _top_k_by_key (1.0): torch.topk keeps any of
    equal values, so where the (k+1)-th equals the k-th a value tied with the k-th may be left
    out. (Taking the top k per slice of 1,024 tokens first was measured slower on an H100:
    torch.topk ran its multi-pass radix select on those slices too.)"""
    totals = totals.view(groups, -1)
    if totals.shape[1] <= k:
        values, index = torch.topk(totals, k, dim=1)
        return values, index, torch.zeros((groups, 1), dtype=torch.float64, device=totals.device)
    values, index = torch.topk(totals, k + 1, dim=1)
    tied = (values[:, k : k + 1] == values[:, k - 1 : k]).to(torch.float64)
    return values[:, :k], index[:, :k], tied


def _top_k_by_key(totals: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.topk over int64 keys that order by value, then by the lower index: exact on ties."""
    totals = totals + 0.0  # -0.0 ranks as 0.0, as on the host
    bits = totals.view(torch.int32).to(torch.int64)
    ordered = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)  # monotone in the float value
    position = torch.arange(totals.shape[1], device=totals.device, dtype=torch.int64)
    keys = ordered * (1 << 32) + (_LOW32 - position)
    top = torch.topk(keys, k, dim=1).indices
    return totals.gather(1, top), top
