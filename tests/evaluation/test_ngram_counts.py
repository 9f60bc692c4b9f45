"""Count_gamma (paper section 4.4) on a hand-made example, its answer worked out in comments."""

from collections import Counter

from tm_guide.evaluation.ngram_counts import (
    PAPER_GAMMAS,
    bleu_tokenizer,
    correct_ngrams,
    count_gamma,
    occurrences,
    uniq_ngrams,
)

TM_TARGETS = ["a b c", "a b d", "e e"]
# Occur: a 2, b 2, c 1, d 1, e 1 (uniq: "e e" counts once), "a b" 2, "b c" 1, "b d" 1, "a b c" 1,
# "a b d" 1, "e e" 1.
HYPOTHESES = ["a b c x", "x e e"]
REFERENCES = ["a b c y", "e x"]
# sentence 1: uniq(Z) & uniq(Y) = {a, b, c, a b, b c, a b c} -> Occur 2, 2, 1, 2, 1, 1
# sentence 2: uniq(Z) & uniq(Y) = {x, e} -> Occur 0, 1
EXPECTED = {0: 1, 1: 4, 2: 3, 5: 0, 10: 0, 20: 0, 50: 0, 100: 0}


def split(text: str) -> list[str]:
    return text.split()


def test_uniq_ngrams_counts_each_ngram_once_up_to_four():
    grams = uniq_ngrams(["a", "a", "a", "a", "a"])
    assert grams == {("a",), ("a", "a"), ("a", "a", "a"), ("a", "a", "a", "a")}


def test_count_gamma_matches_the_worked_example():
    correct = correct_ngrams(HYPOTHESES, REFERENCES, split)
    wanted = set().union(*correct)
    occur = occurrences(TM_TARGETS, wanted, split)
    assert occur[("e",)] == 1  # one TM target, though it holds "e" twice
    assert occur[("a", "b")] == 2
    assert ("x",) not in occur
    assert count_gamma(correct, occur, PAPER_GAMMAS) == EXPECTED


def test_count_gamma_uses_exact_equality_not_at_least():
    occur = Counter({("u",): 3})
    assert count_gamma([{("u",)}], occur, (1, 2, 3, 5)) == {1: 0, 2: 0, 3: 1, 5: 0}


def test_repeated_correct_ngrams_in_one_sentence_count_once_but_add_up_across_sentences():
    correct = correct_ngrams(["a a", "a"], ["a a", "a"], split)
    occur = occurrences(["a"], set().union(*correct), split)
    # sentence 1: {a, a a} -> Occur 1 and 0; sentence 2: {a} -> Occur 1
    assert count_gamma(correct, occur, (0, 1)) == {0: 1, 1: 2}


def test_bleu_tokenizer_splits_punctuation_like_bleu():
    tokenize = bleu_tokenizer()
    assert tokenize("Klicken Sie auf OK.") == ["Klicken", "Sie", "auf", "OK", "."]
