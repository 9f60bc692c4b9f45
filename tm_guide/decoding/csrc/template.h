// Target templates (tm_guide.decoding.template.TargetTemplate): the state automaton that keeps
// a repaired TM target's tokens in order and bounds the free tokens in each gap.
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "rewards.h"

namespace tm_guide_fused {

struct Place {
  int k = 0;  // template tokens produced
  int g = 0;  // free tokens in the current gap
};

// codes of Template's `continues` (WORD_START, WORD, CHARACTER in template.py)
constexpr char kWordStart = 0, kWord = 1, kCharacter = 2;
constexpr int kAllClasses = (1 << kWordStart) | (1 << kWord) | (1 << kCharacter);
// a bit of RowMask::classes past the codes: kWord only while the model holds the word open
// (OPEN_WORD in template.py)
constexpr int kOpenWord = 3;

// The tokens one row may produce (template.py's RowMask): those whose word mark is a bit of
// `classes`, less `deny`, plus `allow`; with the bit kOpenWord, kWord only where word_open.
struct RowMask {
  int classes = kAllClasses;
  std::vector<int> deny, allow;
};

class Template {
 public:
  // `continues`: one code per vocabulary token, kWordStart, kWord (continues a word) or
  // kCharacter (a UTF-8 continuation byte; empty: every token starts a word); a continuing
  // token may finish a word for `overrun` tokens past a spent gap. `ahead`: per gap, the
  // tokens it may not write (the template's next words; empty: none). `least`: per gap, the
  // free tokens it must hold (empty: none). `joins`: per gap, whether the token
  // before it is part of a word, which a continuing token would be glued to (empty: none).
  Template(std::vector<int> tokens, std::vector<int> gaps, int vocab, int end_id,
           std::string continues = std::string(), int overrun = 0,
           std::vector<std::vector<int>> ahead = {}, std::vector<int> least = {},
           std::vector<int> joins = {})
      : tokens_(std::move(tokens)),
        gaps_(std::move(gaps)),
        continues_(std::move(continues)),
        overrun_(overrun),
        ahead_(std::move(ahead)),
        least_(std::move(least)),
        joins_(std::move(joins)) {
    if (tokens_.empty()) throw std::invalid_argument("a template needs at least one token");
    if (gaps_.size() != tokens_.size() + 1)
      throw std::invalid_argument("a template needs one gap per token and one after them");
    for (int t : tokens_)
      if (t < 0 || t >= vocab || t == end_id)
        throw std::invalid_argument("a template token is outside the vocabulary or is </s>");
    for (int g : gaps_)
      if (g < 0) throw std::invalid_argument("a template's gaps must be >= 0");
    if (overrun_ < 0) throw std::invalid_argument("a template's overrun must be >= 0");
    if (!continues_.empty() && static_cast<int>(continues_.size()) != vocab)
      throw std::invalid_argument("a template's word marks must cover the vocabulary");
    if (!ahead_.empty() && ahead_.size() != gaps_.size())
      throw std::invalid_argument("a template needs one lookahead per gap");
    if (!joins_.empty() && joins_.size() != gaps_.size())
      throw std::invalid_argument("a template needs one join per gap");
    if (!least_.empty() && least_.size() != gaps_.size())
      throw std::invalid_argument("a template needs one least per gap, within it");
    for (size_t i = 0; i < least_.size(); ++i)
      if (least_[i] < 0 || least_[i] > gaps_[i])
        throw std::invalid_argument("a template needs one least per gap, within it");
    for (const auto& tokens : ahead_)
      for (int t : tokens)
        if (t < 0 || t >= vocab) throw std::invalid_argument("a lookahead token is outside");
    const int size = static_cast<int>(tokens_.size());
    for (int i = 0; i < size; ++i)
      for (int n = 1; n <= 8 && i + n <= size; ++n) grams_.insert(make_gram(tokens_.data() + i, n));
  }

  // The template token `place` may produce next; -1 once all are produced.
  int next(const Place& place) const {
    return place.k < static_cast<int>(tokens_.size()) ? tokens_[place.k] : -1;
  }

  // The template token the pieces it holds reward at `place`: its next one, once the gap
  // before it holds a free token or where it has no gap; -1 otherwise (rewarded_next in
  // tm_guide/decoding/template.py).
  int rewarded_next(const Place& place) const {
    return place.g > 0 || gaps_[place.k] == 0 ? next(place) : -1;
  }

  // Whether the n tokens at `context` followed by `token` are an n-gram of the template.
  bool holds(const int* context, int n, int token) const {
    Gram g = make_gram(context, n);
    g.ids[n] = token;
    return grams_.count(g) > 0;
  }

  // What `place` allows, as template.py's row_mask states it (for a search that ranks on the
  // engine's device; `mask` below applies the same rule to a row here).
  RowMask row_mask(const Place& place, int end_id) const {
    const int size = static_cast<int>(tokens_.size());
    RowMask out;
    if (place.g < gaps_[place.k]) {
      if (place.k < size) out.deny.push_back(end_id);
      if (!ahead_.empty())
        out.deny.insert(out.deny.end(), ahead_[place.k].begin(), ahead_[place.k].end());
      if (place.g == 0 && !joins_.empty() && joins_[place.k] && !continues_.empty())
        out.classes = 1 << kWordStart;
      if (place.g < least_at(place.k))
        out.deny.push_back(place.k < size ? tokens_[place.k] : end_id);
      if (holds_word(place)) out.classes |= 1 << kOpenWord;
      return out;
    }
    out.allow.push_back(place.k < size ? tokens_[place.k] : end_id);
    if (continues_.empty() || place.g == 0)
      out.classes = 0;
    else if (finishing_word(place))
      out.classes = (kAllClasses & ~(1 << kWordStart)) | (1 << kOpenWord);
    else
      out.classes = 1 << kCharacter;
    return out;
  }

  // Sets what `place` forbids to -inf in one row of log-probabilities.
  void mask(const Place& place, float* row, int vocab, int end_id) const {
    const int size = static_cast<int>(tokens_.size());
    constexpr float dead = -std::numeric_limits<float>::infinity();
    // read before any token is set to -inf, as RowMask.apply reads the row it is given
    const bool closed = holds_word(place) && !word_open(row, vocab, end_id);
    if (place.g < gaps_[place.k]) {
      if (closed)
        for (int i = 0; i < vocab; ++i)
          if (continues_[i] == kWord) row[i] = dead;
      if (place.k < size) row[end_id] = dead;
      if (!ahead_.empty())
        for (int t : ahead_[place.k]) row[t] = dead;
      if (place.g == 0 && !joins_.empty() && joins_[place.k] && !continues_.empty())
        for (int i = 0; i < vocab; ++i)
          if (continues_[i] != kWordStart) row[i] = dead;
      if (place.g < least_at(place.k)) row[place.k < size ? tokens_[place.k] : end_id] = dead;
      return;
    }
    const int allowed = place.k < size ? tokens_[place.k] : end_id;
    const float kept = row[allowed];
    if (continues_.empty() || place.g == 0) {  // after a template token only the next one
      for (int i = 0; i < vocab; ++i) row[i] = dead;
    } else if (finishing_word(place)) {
      for (int i = 0; i < vocab; ++i)
        if (continues_[i] == kWordStart || (closed && continues_[i] == kWord)) row[i] = dead;
    } else {  // a byte piece may still finish a character (the UTF-8 rule allows no other way)
      for (int i = 0; i < vocab; ++i)
        if (continues_[i] != kCharacter) row[i] = dead;
    }
    row[allowed] = kept;
  }

  // Whether the rule makes the model write on at `place` after a free token, so that a token
  // continuing the word needs word_open (holds_word in tm_guide/decoding/template.py).
  bool holds_word(const Place& place) const {
    if (continues_.empty() || place.g == 0) return false;
    return place.g < gaps_[place.k] ? place.g < least_at(place.k) : finishing_word(place);
  }

  // Whether `place` (its gap spent) may still continue the word the model is writing
  // (finishing_word in tm_guide/decoding/template.py).
  bool finishing_word(const Place& place) const {
    return !continues_.empty() && place.g > 0 && place.g < gaps_[place.k] + overrun_;
  }

  // Whether the model, by one row of its log-probabilities, would rather go on with the word
  // it is writing than start a new one, </s> counted on neither side (word_open in
  // tm_guide/decoding/template.py).
  bool word_open(const float* row, int vocab, int end_id) const {
    double starts = 0.0, rest = 0.0;
    for (int i = 0; i < vocab; ++i) {
      if (i == end_id) continue;
      const double p = std::exp(static_cast<double>(row[i]));
      (continues_[i] == kWordStart ? starts : rest) += p;
    }
    return rest >= starts;
  }

  Place advance(const Place& place, int token) const {
    if (place.k < static_cast<int>(tokens_.size()) && token == tokens_[place.k] &&
        place.g >= least_at(place.k))
      return Place{place.k + 1, 0};
    return Place{place.k, place.g + 1};
  }

  // The free tokens the gap before template token k must hold.
  int least_at(int k) const { return least_.empty() ? 0 : least_[k]; }

 private:
  std::vector<int> tokens_;
  std::vector<int> gaps_;
  std::string continues_;
  int overrun_;
  std::vector<std::vector<int>> ahead_;
  std::vector<int> least_;
  std::vector<int> joins_;  // per gap: the template token before it is part of a word
  std::unordered_set<Gram, GramHash> grams_;  // its n-grams, n <= 8
};

}  // namespace tm_guide_fused
