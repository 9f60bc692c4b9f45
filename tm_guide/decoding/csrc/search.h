// The guided beam search: tm_guide/decoding/search.py's beam_search, rule for rule.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels.h"
#include "model.h"
#include "rewards.h"
#include "template.h"
#include "utf8.h"

namespace tm_guide_fused {

struct SearchConfig {
  int beam = 5;
  int max_closed = 5;
  bool early_exit = false;
  int num_hypotheses = 1;
  int min_length = 1;
  double lam = 0.0;
  bool reward_repeats = true;
  int vocab = 0;
  int start_id = 0;
  int end_id = 0;
  int threads = 1;  // the decoder's threads for one batch (products, attention rows)
  // the id of each byte-fallback piece <0x00>..<0xFF>, -1 where there is none (utf8.h)
  std::vector<int> id_of_byte;
};

struct Closed {
  float raw_score;
  std::vector<int> tokens;
  double log_prob;
  double reward;
  int length;
};

struct Candidate {
  float score;
  int64_t flat;  // local row * vocab + token
};

// Puts (total, flat) into `best` (at most k, best first; equal totals keep the earlier flat
// index first, and candidates come in increasing flat order).
inline void offer(std::vector<Candidate>& best, int k, float total, int64_t flat) {
  auto at = std::upper_bound(best.begin(), best.end(), total,
                             [](float v, const Candidate& c) { return v > c.score; });
  best.insert(at, Candidate{total, flat});
  if (static_cast<int>(best.size()) > k) best.pop_back();
}

// The k best (row, token) of a group of rows by cum[row] + values[row, token]; ties: lower flat
// index first (search.top_candidates). Once k are held, only totals above the k-th are looked
// at, 16 at a time.
inline void top_k(const float* values, const float* cum, int rows, int vocab, int k,
                  std::vector<Candidate>& best) {
  best.clear();
  for (int r = 0; r < rows; ++r) {
    const float* row = values + static_cast<size_t>(r) * vocab;
    const float base = cum[r];
    const int64_t first = static_cast<int64_t>(r) * vocab;
    int u = 0;
    for (; u < vocab && static_cast<int>(best.size()) < k; ++u)
      offer(best, k, base + row[u], first + u);
    if (active_kernel != Kernel::portable) {
      for (; u + 16 <= vocab; u += 16) {
        uint32_t hits = above16(row + u, base, best.back().score);
        while (hits) {
          const int j = __builtin_ctz(hits);
          hits &= hits - 1;
          const float total = base + row[u + j];
          if (total > best.back().score) offer(best, k, total, first + u + j);
        }
      }
    }
    for (; u < vocab; ++u) {
      const float total = base + row[u];
      if (total > best.back().score) offer(best, k, total, first + u);
    }
  }
}

// The candidates of one sentence as search.py's _apply_prefix leaves them.
struct Picks {
  std::vector<int> tokens, origins;
  std::vector<float> scores;
};

inline std::vector<std::vector<Closed>> run_search(
    StepProvider& provider, int batch, const std::vector<int>& caps, const SearchConfig& cfg,
    const std::vector<const RewardTable*>& rewards,
    const std::vector<std::vector<int>>& prefixes,
    const std::vector<const Template*>& templates) {
  const int vocab = cfg.vocab, beam = cfg.beam, num_candidates = 2 * beam;
  constexpr float dead = -std::numeric_limits<float>::infinity();
  const bool use_templates =
      std::any_of(templates.begin(), templates.end(), [](auto* t) { return t; });
  const bool use_reward =
      cfg.lam != 0.0 && std::any_of(rewards.begin(), rewards.end(), [](auto* t) { return t; });
  const bool track_used = use_reward && !cfg.reward_repeats;
  int longest = 0;
  for (int c : caps) longest = std::max(longest, c);

  std::vector<int> live(batch);
  for (int i = 0; i < batch; ++i) live[i] = i;
  int rows_per = 1;
  std::vector<int> parents;
  std::vector<int> last_ids(batch, cfg.start_id);
  std::vector<float> cum_score(batch, 0.0f), cum_logp(batch, 0.0f);
  std::vector<double> cum_reward(batch, 0.0);
  std::vector<std::vector<int>> sequences(batch);
  std::vector<std::vector<int>> used(batch);  // sorted ids of the limited pieces produced, with
                                              // repeats (a piece's count is its run's length)
  std::vector<std::vector<Closed>> closed(batch);
  std::vector<char> top_closed(batch, 0);
  std::vector<Place> places(use_templates ? batch : 0);  // each row's template state
  const Utf8Rule utf8(cfg.id_of_byte, vocab);

  // per row: (token, lambda * reward as float32) of this step
  std::vector<std::vector<std::pair<int, float>>> step_rewards;
  std::vector<std::pair<int, float>> saved;  // (flat index, original log-prob)
  std::vector<double> sums;

  for (int step = 0; step < longest; ++step) {
    const int rows = static_cast<int>(live.size()) * rows_per;
    std::vector<int> row_sentences(rows);
    for (int r = 0; r < rows; ++r) row_sentences[r] = live[r / rows_per];
    float* log_probs = provider.step(step == 0 ? nullptr : parents.data(), row_sentences, last_ids,
                                     step < cfg.min_length);
    if (use_templates) {
      for (int r = 0; r < rows; ++r) {
        const int sentence = row_sentences[r];
        const Template* t = templates[sentence];
        if (t && step >= static_cast<int>(prefixes[sentence].size()))
          t->mask(places[r], log_probs + static_cast<size_t>(r) * vocab, vocab, cfg.end_id);
      }
    }
    if (utf8.active()) {  // byte pieces only in valid UTF-8 order (utf8.h)
      for (int r = 0; r < rows; ++r) {
        const int sentence = row_sentences[r];
        if (step >= static_cast<int>(prefixes[sentence].size()))
          utf8.mask(sequences[r], log_probs + static_cast<size_t>(r) * vocab, vocab,
                    step + 1 == caps[sentence]);
      }
    }
    step_rewards.assign(use_reward ? rows : 0, {});
    saved.clear();
    if (use_reward) {
      for (int r = 0; r < rows; ++r) {
        const RewardTable* table = rewards[row_sentences[r]];
        if (!table) continue;
        // under a template, a piece it holds rewards only its next token, once the gap before
        // it holds a free token (search.py's rule)
        const Template* shape =
            use_templates && step >= static_cast<int>(prefixes[row_sentences[r]].size())
                ? templates[row_sentences[r]]
                : nullptr;
        const int exempt = shape ? shape->rewarded_next(places[r]) : -1;
        const auto& history = sequences[r];
        const int width = table->max_n() - 1;
        const int tail = std::min<int>(width, static_cast<int>(history.size()));
        const int* end = history.data() + history.size();
        sums.assign(table->rewarded().size(), 0.0);
        for (int n = 0; n <= tail; ++n) {
          const auto* entries = table->after(end - n, n);
          if (!entries) continue;
          for (const auto& e : *entries) {
            if (track_used && e.piece >= 0) {
              const auto range = std::equal_range(used[r].begin(), used[r].end(), e.piece);
              if (range.second - range.first >= table->limit(e.piece)) continue;
            }
            if (shape) {
              const int token = table->rewarded()[e.slot];
              if (token != exempt && shape->holds(end - n, n, token)) continue;
            }
            sums[e.slot] += e.score;
          }
        }
        auto& out = step_rewards[r];
        for (size_t slot = 0; slot < sums.size(); ++slot) {
          if (sums[slot] == 0.0) continue;  // untouched, or summed to 0: no reward
          const float value = static_cast<float>(sums[slot] * cfg.lam);
          const int token = table->rewarded()[slot];
          out.emplace_back(token, value);
          float& cell = log_probs[static_cast<size_t>(r) * vocab + token];
          saved.emplace_back(static_cast<int>(static_cast<size_t>(r) * vocab + token), cell);
          cell += value;
        }
      }
    }
    auto reward_of = [&](int row, int token) -> double {
      if (!use_reward) return 0.0;
      for (const auto& [t, v] : step_rewards[row])
        if (t == token) return static_cast<double>(v);
      return 0.0;
    };

    // each sentence's candidates on its own (on the decoder's threads when the batch is large
    // enough to pay for them): the same candidates on any thread count
    std::vector<std::vector<Candidate>> tops(live.size());
    const int groups = static_cast<int>(live.size());
    const int64_t scanned = static_cast<int64_t>(groups) * rows_per * vocab;
    for_each_row(groups, scanned >= (1 << 18) ? cfg.threads : 1, [&](int g) {
      const size_t first = static_cast<size_t>(g) * rows_per;
      top_k(log_probs + first * vocab, cum_score.data() + first, rows_per, vocab, num_candidates,
            tops[g]);
    });
    for (const auto& [flat, value] : saved) log_probs[flat] = value;  // the model's own again

    std::vector<int> next_rows, next_ids, still_live;
    std::vector<float> next_score;
    std::vector<char> next_counted;
    for (size_t g = 0; g < live.size(); ++g) {
      const int sentence = live[g];
      const bool is_last_step = step + 1 == caps[sentence];
      const auto& cands = tops[g];
      const int count = static_cast<int>(cands.size());
      const std::vector<int>& prefix = prefixes[sentence];
      const int prefix_length = static_cast<int>(prefix.size());
      const bool counted = step >= prefix_length;  // a forced token's log-prob is not counted
      Picks picks;
      for (const auto& c : cands) {
        picks.tokens.push_back(static_cast<int>(c.flat % vocab));
        picks.origins.push_back(static_cast<int>(g * rows_per + c.flat / vocab));
        picks.scores.push_back(c.score);
      }
      if (prefix_length > 0 && step <= prefix_length) {  // CTranslate2's target_prefix rule
        const int first_row = static_cast<int>(g * rows_per);
        for (int j = 0; j < count; ++j) {
          if (step < prefix_length) {
            picks.tokens[j] = prefix[step];
            picks.scores[j] = j == 0 ? 0.0f : -1e10f;
            picks.origins[j] = first_row;
          } else if (j > 0 && picks.tokens[j] == cfg.end_id) {
            picks.tokens[j] = 0;
            picks.scores[j] = -1e10f;
            picks.origins[j] = first_row;
          }
        }
      }
      auto token_of = [&](int j) { return picks.tokens[j]; };
      auto origin_of = [&](int j) { return picks.origins[j]; };
      int secondary = beam;
      std::vector<int> chosen;
      for (int k = 0; k < beam && k < count; ++k) {
        int pick = k;
        const int token = token_of(k);
        const bool closes = (token == cfg.end_id && counted) || is_last_step;
        if (closes && picks.scores[k] != dead) {  // a dead row never closes
          if (k == 0) top_closed[sentence] = 1;
          const int origin = origin_of(k);
          Closed c;
          c.raw_score = picks.scores[k];
          c.tokens = sequences[origin];
          if (token != cfg.end_id) c.tokens.push_back(token);
          c.log_prob = static_cast<double>(
              cum_logp[origin] +
              (counted ? log_probs[static_cast<size_t>(origin) * vocab + token] : 0.0f));
          c.reward = cum_reward[origin] + (counted ? reward_of(origin, token) : 0.0);
          c.length = static_cast<int>(sequences[origin].size()) + 1;
          closed[sentence].push_back(std::move(c));
          for (int j = secondary; j < count; ++j) {
            if (token_of(j) != cfg.end_id) {
              pick = j;
              secondary = j + 1;
              break;
            }
          }
        }
        chosen.push_back(pick);
      }
      bool done;
      if (is_last_step) {
        done = true;
      } else if (cfg.early_exit) {
        done =
            top_closed[sentence] && static_cast<int>(closed[sentence].size()) >= cfg.num_hypotheses;
      } else {
        done = static_cast<int>(closed[sentence].size()) >= cfg.max_closed;
      }
      if (done) continue;
      still_live.push_back(sentence);
      for (int pick : chosen) {
        next_rows.push_back(origin_of(pick));
        next_ids.push_back(token_of(pick));
        next_score.push_back(picks.scores[pick]);
        next_counted.push_back(counted);
      }
    }
    if (still_live.empty()) break;
    const size_t n_next = next_rows.size();
    std::vector<float> new_logp(n_next);
    std::vector<double> new_reward(n_next);
    std::vector<std::vector<int>> new_sequences(n_next), new_used(track_used ? n_next : 0);
    std::vector<Place> new_places(use_templates ? n_next : 0);
    for (size_t i = 0; i < n_next; ++i) {
      const int p = next_rows[i], t = next_ids[i];
      new_logp[i] = cum_logp[p] + (next_counted[i] ? log_probs[static_cast<size_t>(p) * vocab + t]
                                                    : 0.0f);
      new_reward[i] = cum_reward[p] + (next_counted[i] ? reward_of(p, t) : 0.0);
      new_sequences[i] = sequences[p];
      new_sequences[i].push_back(t);
      if (use_templates) {
        const Template* tpl = templates[still_live[i / beam]];
        new_places[i] = tpl && next_counted[i] ? tpl->advance(places[p], t) : places[p];
      }
      if (track_used) {
        new_used[i] = used[p];
        const RewardTable* table = rewards[still_live[i / beam]];
        if (table) {
          const auto& h = new_sequences[i];
          const int upto = std::min<int>(table->max_n(), static_cast<int>(h.size()));
          for (int n = 1; n <= upto; ++n) {
            const int piece = table->piece(h.data() + h.size() - n, n);
            if (piece < 0) continue;
            new_used[i].insert(std::upper_bound(new_used[i].begin(), new_used[i].end(), piece),
                               piece);
          }
        }
      }
    }
    parents = std::move(next_rows);
    last_ids = std::move(next_ids);
    cum_score = std::move(next_score);
    cum_logp = std::move(new_logp);
    cum_reward = std::move(new_reward);
    sequences = std::move(new_sequences);
    if (track_used) used = std::move(new_used);
    if (use_templates) places = std::move(new_places);
    live = std::move(still_live);
    rows_per = beam;
  }
  return closed;
}

// A step provider that asks Python (tests: the compiled search over another engine's steps).

}  // namespace tm_guide_fused
