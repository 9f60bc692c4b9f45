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

// What one search applies at every step, fixed for the whole search (search.py's _Rules).
struct Rules {
  const SearchConfig& cfg;
  const std::vector<int>& caps;
  const std::vector<const RewardTable*>& rewards;
  const std::vector<std::vector<int>>& prefixes;
  const std::vector<const Template*>& templates;
  Utf8Rule utf8;
  bool use_templates;
  bool use_reward;
  bool track_used;

  Rules(const SearchConfig& config, const std::vector<int>& sentence_caps,
        const std::vector<const RewardTable*>& tables, const std::vector<std::vector<int>>& forced,
        const std::vector<const Template*>& shapes)
      : cfg(config),
        caps(sentence_caps),
        rewards(tables),
        prefixes(forced),
        templates(shapes),
        utf8(config.id_of_byte, config.vocab),
        use_templates(std::any_of(shapes.begin(), shapes.end(), [](auto* t) { return t; })),
        use_reward(config.lam != 0.0 &&
                   std::any_of(tables.begin(), tables.end(), [](auto* t) { return t; })),
        track_used(use_reward && !config.reward_repeats) {}

  // Whether `step` of `sentence` comes after its forced prefix (its rules apply).
  bool after_prefix(int sentence, int step) const {
    return step >= static_cast<int>(prefixes[sentence].size());
  }
};

// The search's state between steps (search.py's _Beam).
struct Beam {
  std::vector<int> live;  // batch index of each live sentence, in row-group order
  int rows_per = 1;
  std::vector<int> parents, last_ids;
  std::vector<float> cum_score, cum_logp;
  std::vector<double> cum_reward;
  std::vector<std::vector<int>> sequences;
  std::vector<std::vector<int>> used;  // sorted ids of the limited pieces produced, with repeats
                                       // (a piece's count is its run's length)
  std::vector<std::vector<Closed>> closed;
  std::vector<char> top_closed;
  std::vector<Place> places;  // each row's template state

  Beam(int batch, int start_id, bool use_templates)
      : live(batch),
        last_ids(batch, start_id),
        cum_score(batch, 0.0f),
        cum_logp(batch, 0.0f),
        cum_reward(batch, 0.0),
        sequences(batch),
        used(batch),
        closed(batch),
        top_closed(batch, 0),
        places(use_templates ? batch : 0) {
    for (int i = 0; i < batch; ++i) live[i] = i;
  }

  int rows() const { return static_cast<int>(live.size()) * rows_per; }

  // The batch index of each row's sentence.
  std::vector<int> row_sentences() const {
    std::vector<int> out(rows());
    for (int r = 0; r < rows(); ++r) out[r] = live[r / rows_per];
    return out;
  }
};

// One step's piece reward: per row, (token, lambda * reward as float32), and the log-prob
// cells it raised, with their values before.
struct StepReward {
  std::vector<std::vector<std::pair<int, float>>> per_row;
  std::vector<std::pair<int, float>> saved;

  double of(int row, int token) const {
    if (per_row.empty()) return 0.0;
    for (const auto& [t, v] : per_row[row])
      if (t == token) return static_cast<double>(v);
    return 0.0;
  }
};

// The candidates kept for the next step (search.py's _Picks).
struct NextBeam {
  std::vector<int> rows, ids, live;
  std::vector<float> scores;
  std::vector<char> counted;
};

// The model's log-probabilities of one step as the search reads them (search.py's
// _StepScores): every one (`dense`, [rows, vocab]), or those of the candidates an engine ranked
// on its device (sorted row * vocab + token keys), with each row's token 0 for the prefix rule.
struct StepScores {
  const float* dense = nullptr;
  int vocab = 0;
  std::vector<int64_t> keys;
  std::vector<float> values;
  std::vector<float> first_column;

  float at(int row, int token) const {
    if (dense) return dense[static_cast<size_t>(row) * vocab + token];
    const int64_t key = static_cast<int64_t>(row) * vocab + token;
    const auto it = std::lower_bound(keys.begin(), keys.end(), key);
    if (it != keys.end() && *it == key) return values[it - keys.begin()];
    if (token == 0) return first_column[row];        // CTranslate2's prefix rule's token 0
    return std::numeric_limits<float>::quiet_NaN();  // a forced token: never counted
  }
};

// The template rule, then the UTF-8 rule: the tokens each row may not produce get -inf.
inline void mask_rules(const Rules& rules, const Beam& beam, const std::vector<int>& row_sentences,
                       float* log_probs, int step) {
  const int vocab = rules.cfg.vocab;
  if (rules.use_templates) {
    for (int r = 0; r < beam.rows(); ++r) {
      const int sentence = row_sentences[r];
      const Template* t = rules.templates[sentence];
      if (t && rules.after_prefix(sentence, step))
        t->mask(beam.places[r], log_probs + static_cast<size_t>(r) * vocab, vocab,
                rules.cfg.end_id);
    }
  }
  if (rules.utf8.active()) {  // byte pieces only in valid UTF-8 order (utf8.h)
    for (int r = 0; r < beam.rows(); ++r) {
      const int sentence = row_sentences[r];
      if (rules.after_prefix(sentence, step))
        rules.utf8.mask(beam.sequences[r], log_probs + static_cast<size_t>(r) * vocab, vocab,
                        step + 1 == rules.caps[sentence]);
    }
  }
}

// The reward of each token after one row's history: lambda times the sums of the pieces it
// completes, where the row has not used up a limited piece and a template does not hold it.
inline void row_reward(const Rules& rules, const Beam& beam, int r, const RewardTable& table,
                       const Template* shape, std::vector<double>& sums) {
  const int exempt = shape ? shape->rewarded_next(beam.places[r]) : -1;
  const auto& history = beam.sequences[r];
  const int tail = std::min<int>(table.max_n() - 1, static_cast<int>(history.size()));
  const int* end = history.data() + history.size();
  sums.assign(table.rewarded().size(), 0.0);
  for (int n = 0; n <= tail; ++n) {
    const auto* entries = table.after(end - n, n);
    if (!entries) continue;
    for (const auto& e : *entries) {
      if (rules.track_used && e.piece >= 0) {
        const auto range = std::equal_range(beam.used[r].begin(), beam.used[r].end(), e.piece);
        if (range.second - range.first >= table.limit(e.piece)) continue;
      }
      if (shape) {
        const int token = table.rewarded()[e.slot];
        if (token != exempt && shape->holds(end - n, n, token)) continue;
      }
      sums[e.slot] += e.score;
    }
  }
}

// The piece reward rule (eq. 10): per row, each token it rewards and lambda * reward as float32;
// under a template, a piece it holds rewards only its next token, once the gap before it holds
// a free token (search.py's rule).
inline void step_rewards(const Rules& rules, const Beam& beam,
                         const std::vector<int>& row_sentences, int step, StepReward& out,
                         std::vector<double>& sums) {
  out.per_row.assign(rules.use_reward ? beam.rows() : 0, {});
  out.saved.clear();
  if (!rules.use_reward) return;
  for (int r = 0; r < beam.rows(); ++r) {
    const int sentence = row_sentences[r];
    const RewardTable* table = rules.rewards[sentence];
    if (!table) continue;
    const Template* shape = rules.use_templates && rules.after_prefix(sentence, step)
                                ? rules.templates[sentence]
                                : nullptr;
    row_reward(rules, beam, r, *table, shape, sums);
    auto& row = out.per_row[r];
    for (size_t slot = 0; slot < sums.size(); ++slot) {
      if (sums[slot] == 0.0) continue;  // untouched, or summed to 0: no reward
      row.emplace_back(table->rewarded()[slot], static_cast<float>(sums[slot] * rules.cfg.lam));
    }
  }
}

// The step's rewards added to the rows' log-probs for the ranking (`ranked` takes them off).
inline void add_step_reward(const Rules& rules, const Beam& beam,
                            const std::vector<int>& row_sentences, float* log_probs, int step,
                            StepReward& out, std::vector<double>& sums) {
  step_rewards(rules, beam, row_sentences, step, out, sums);
  const size_t vocab = static_cast<size_t>(rules.cfg.vocab);
  for (size_t r = 0; r < out.per_row.size(); ++r) {
    for (const auto& [token, value] : out.per_row[r]) {
      float& cell = log_probs[r * vocab + token];
      out.saved.emplace_back(static_cast<int>(r * vocab + token), cell);
      cell += value;
    }
  }
}

// Each live sentence's 2K best candidates (on the decoder's threads when the batch is large
// enough to pay for them: the same candidates on any thread count); the reward is then taken
// off the log-probs again, which hold the model's own afterwards.
inline std::vector<std::vector<Candidate>> ranked(const Rules& rules, const Beam& beam,
                                                  float* log_probs, const StepReward& reward) {
  const int vocab = rules.cfg.vocab;
  std::vector<std::vector<Candidate>> tops(beam.live.size());
  const int groups = static_cast<int>(beam.live.size());
  const int64_t scanned = static_cast<int64_t>(groups) * beam.rows_per * vocab;
  for_each_row(groups, scanned >= (1 << 18) ? rules.cfg.threads : 1, [&](int g) {
    const size_t first = static_cast<size_t>(g) * beam.rows_per;
    top_k(log_probs + first * vocab, beam.cum_score.data() + first, beam.rows_per, vocab,
          2 * rules.cfg.beam, tops[g]);
  });
  for (const auto& [flat, value] : reward.saved) log_probs[flat] = value;
  return tops;
}

// One sentence's candidates as tokens, origin rows and scores, its forced prefix applied
// (CTranslate2's target_prefix rule, search.py's _apply_prefix).
inline Picks candidates_of(const Rules& rules, const Beam& beam,
                           const std::vector<Candidate>& cands, int g, int sentence, int step) {
  const int vocab = rules.cfg.vocab;
  Picks picks;
  for (const auto& c : cands) {
    picks.tokens.push_back(static_cast<int>(c.flat % vocab));
    picks.origins.push_back(static_cast<int>(g * beam.rows_per + c.flat / vocab));
    picks.scores.push_back(c.score);
  }
  const std::vector<int>& prefix = rules.prefixes[sentence];
  const int prefix_length = static_cast<int>(prefix.size());
  if (prefix_length > 0 && step <= prefix_length) {
    const int first_row = g * beam.rows_per;
    for (int j = 0; j < static_cast<int>(cands.size()); ++j) {
      if (step < prefix_length) {
        picks.tokens[j] = prefix[step];
        picks.scores[j] = j == 0 ? 0.0f : -1e10f;
        picks.origins[j] = first_row;
      } else if (j > 0 && picks.tokens[j] == rules.cfg.end_id) {
        picks.tokens[j] = 0;
        picks.scores[j] = -1e10f;
        picks.origins[j] = first_row;
      }
    }
  }
  return picks;
}

// The end rule: the hypothesis of row `origin` closes with `token` (its </s>, or its last
// token on the last step); a forced token's log-prob and reward are not counted.
inline void close_hypothesis(const Rules& rules, Beam& beam, const StepScores& scores,
                             const StepReward& reward, int sentence, int origin, int token,
                             float score, bool counted) {
  Closed c;
  c.raw_score = score;
  c.tokens = beam.sequences[origin];
  if (token != rules.cfg.end_id) c.tokens.push_back(token);
  c.log_prob =
      static_cast<double>(beam.cum_logp[origin] + (counted ? scores.at(origin, token) : 0.0f));
  c.reward = beam.cum_reward[origin] + (counted ? reward.of(origin, token) : 0.0);
  c.length = static_cast<int>(beam.sequences[origin].size()) + 1;
  beam.closed[sentence].push_back(std::move(c));
}

// The length rule: a sentence is done on its last step, once max_closed hypotheses are
// closed, or (early_exit) once its best beam closed with num_hypotheses.
inline bool finished(const Rules& rules, const Beam& beam, int sentence, bool is_last_step) {
  const int count = static_cast<int>(beam.closed[sentence].size());
  if (is_last_step) return true;
  if (rules.cfg.early_exit) return beam.top_closed[sentence] && count >= rules.cfg.num_hypotheses;
  return count >= rules.cfg.max_closed;
}

// One live sentence's step: the candidates that close hypotheses closed, the next candidate
// not ending in </s> from the secondary K in their place, and its K rows kept unless done.
inline void advance_sentence(const Rules& rules, Beam& beam, const StepScores& scores,
                             const StepReward& reward, const std::vector<Candidate>& cands, int g,
                             int step, NextBeam& next) {
  constexpr float dead = -std::numeric_limits<float>::infinity();
  const int sentence = beam.live[g], width = rules.cfg.beam, end_id = rules.cfg.end_id;
  const bool is_last_step = step + 1 == rules.caps[sentence];
  const bool counted = rules.after_prefix(sentence, step);  // a forced token is not counted
  const Picks picks = candidates_of(rules, beam, cands, g, sentence, step);
  const int count = static_cast<int>(cands.size());
  int secondary = width;
  std::vector<int> chosen;
  for (int k = 0; k < width && k < count; ++k) {
    int pick = k;
    const int token = picks.tokens[k];
    const bool closes = (token == end_id && counted) || is_last_step;
    if (closes && picks.scores[k] != dead) {  // a dead row never closes
      if (k == 0) beam.top_closed[sentence] = 1;
      close_hypothesis(rules, beam, scores, reward, sentence, picks.origins[k], token,
                       picks.scores[k], counted);
      for (int j = secondary; j < count; ++j) {
        if (picks.tokens[j] != end_id) {
          pick = j;
          secondary = j + 1;
          break;
        }
      }
    }
    chosen.push_back(pick);
  }
  if (finished(rules, beam, sentence, is_last_step)) return;
  next.live.push_back(sentence);
  for (int pick : chosen) {
    next.rows.push_back(picks.origins[pick]);
    next.ids.push_back(picks.tokens[pick]);
    next.scores.push_back(picks.scores[pick]);
    next.counted.push_back(counted);
  }
}

// The limited pieces a row has produced once `sequence` (its history with its new token) ends
// as it does: `used` plus every piece the new token completes.
inline std::vector<int> used_after(const RewardTable& table, std::vector<int> used,
                                   const std::vector<int>& sequence) {
  const int upto = std::min<int>(table.max_n(), static_cast<int>(sequence.size()));
  for (int n = 1; n <= upto; ++n) {
    const int piece = table.piece(sequence.data() + sequence.size() - n, n);
    if (piece < 0) continue;
    used.insert(std::upper_bound(used.begin(), used.end(), piece), piece);
  }
  return used;
}

// The beam for the next step from the kept candidates: scores, tokens, template states (the
// template rule's automaton) and the limited pieces each row used.
inline void take(const Rules& rules, Beam& beam, const StepScores& scores, const StepReward& reward,
                 NextBeam& next) {
  const int width = rules.cfg.beam;
  const size_t n_next = next.rows.size();
  std::vector<float> new_logp(n_next);
  std::vector<double> new_reward(n_next);
  std::vector<std::vector<int>> new_sequences(n_next), new_used(rules.track_used ? n_next : 0);
  std::vector<Place> new_places(rules.use_templates ? n_next : 0);
  for (size_t i = 0; i < n_next; ++i) {
    const int p = next.rows[i], t = next.ids[i];
    const int sentence = next.live[i / width];
    new_logp[i] = beam.cum_logp[p] + (next.counted[i] ? scores.at(p, t) : 0.0f);
    new_reward[i] = beam.cum_reward[p] + (next.counted[i] ? reward.of(p, t) : 0.0);
    new_sequences[i] = beam.sequences[p];
    new_sequences[i].push_back(t);
    if (rules.use_templates) {
      const Template* tpl = rules.templates[sentence];
      new_places[i] = tpl && next.counted[i] ? tpl->advance(beam.places[p], t) : beam.places[p];
    }
    if (rules.track_used) {
      const RewardTable* table = rules.rewards[sentence];
      new_used[i] = table ? used_after(*table, beam.used[p], new_sequences[i]) : beam.used[p];
    }
  }
  beam.parents = std::move(next.rows);
  beam.last_ids = std::move(next.ids);
  beam.cum_score = std::move(next.scores);
  beam.cum_logp = std::move(new_logp);
  beam.cum_reward = std::move(new_reward);
  beam.sequences = std::move(new_sequences);
  if (rules.track_used) beam.used = std::move(new_used);
  if (rules.use_templates) beam.places = std::move(new_places);
  beam.live = std::move(next.live);
  beam.rows_per = width;
}

// What a search holds for its whole run: its rules, its beam, the longest cap, and the step's
// reward buffers (reused from step to step).
struct SearchRun {
  const Rules rules;
  Beam beam;
  const int longest;
  StepReward reward;
  std::vector<double> sums;

  SearchRun(int batch, const std::vector<int>& caps, const SearchConfig& cfg,
            const std::vector<const RewardTable*>& rewards,
            const std::vector<std::vector<int>>& prefixes,
            const std::vector<const Template*>& templates)
      : rules(cfg, caps, rewards, prefixes, templates),
        beam(batch, cfg.start_id, rules.use_templates),
        longest(caps.empty() ? 0 : *std::max_element(caps.begin(), caps.end())) {}

  // Each live sentence's candidates (`tops`, one list per row group) kept, closed or dropped;
  // false once no sentence is live.
  bool advance(const StepScores& scores, const std::vector<std::vector<Candidate>>& tops,
               int step) {
    NextBeam next;
    for (size_t g = 0; g < tops.size(); ++g)
      advance_sentence(rules, beam, scores, reward, tops[g], static_cast<int>(g), step, next);
    if (next.live.empty()) return false;
    take(rules, beam, scores, reward, next);
    return true;
  }
};

inline std::vector<std::vector<Closed>> run_search(StepProvider& provider, int batch,
                                                   const std::vector<int>& caps,
                                                   const SearchConfig& cfg,
                                                   const std::vector<const RewardTable*>& rewards,
                                                   const std::vector<std::vector<int>>& prefixes,
                                                   const std::vector<const Template*>& templates) {
  SearchRun run(batch, caps, cfg, rewards, prefixes, templates);
  const Rules& rules = run.rules;
  Beam& beam = run.beam;
  for (int step = 0; step < run.longest; ++step) {
    const std::vector<int> row_sentences = beam.row_sentences();
    float* log_probs = provider.step(step == 0 ? nullptr : beam.parents.data(), row_sentences,
                                     beam.last_ids, step < cfg.min_length);
    mask_rules(rules, beam, row_sentences, log_probs, step);
    add_step_reward(rules, beam, row_sentences, log_probs, step, run.reward, run.sums);
    StepScores scores;
    scores.dense = log_probs;
    scores.vocab = cfg.vocab;
    if (!run.advance(scores, ranked(rules, beam, log_probs, run.reward), step)) break;
  }
  return beam.closed;
}

// What a search that ranks on the engine's device sends it each step (candidates.py's
// CandidateRequest): per row its score, template mask and UTF-8 rule (mode 0: none), and the
// piece rewards as (row * vocab + token, lambda * reward).
struct StepRequest {
  int k = 0;
  int groups = 0;
  std::vector<float> cum_score;
  std::vector<int> classes;
  std::vector<std::vector<int>> deny, allow;
  std::vector<int> utf8_mode, utf8_low, utf8_high;
  bool masks = false;  // whether any rule applies this step
  std::vector<int64_t> reward_keys;
  std::vector<float> reward_values;
};

// What it sends back (candidates.py's Candidates): each group's k best, best first, and the
// model's log-probability of each (group-major), and of token 0 per row.
struct RankedStep {
  std::vector<std::vector<Candidate>> tops;
  std::vector<float> log_probs;
  std::vector<float> first_column;
};

struct CandidateProvider {
  virtual ~CandidateProvider() = default;
  virtual RankedStep rank(const int* parents, const std::vector<int>& row_sentences,
                          const std::vector<int>& last_ids, bool mask_end,
                          const StepRequest& request) = 0;
};

// The step's rules stated for the device: the template and UTF-8 masks of every row, the
// piece rewards (the same sums as add_step_reward, without a row of scores to add them to).
inline void state_rules(const Rules& rules, const Beam& beam, const std::vector<int>& row_sentences,
                        int step, StepReward& reward, std::vector<double>& sums,
                        StepRequest& request) {
  const int rows = beam.rows(), vocab = rules.cfg.vocab;
  request.k = 2 * rules.cfg.beam;
  request.groups = static_cast<int>(beam.live.size());
  request.cum_score = beam.cum_score;
  request.masks = rules.use_templates || rules.utf8.active();
  if (request.masks) {
    request.classes.assign(rows, kAllClasses);
    request.deny.assign(rows, {});
    request.allow.assign(rows, {});
    request.utf8_mode.assign(rows, 0);
    request.utf8_low.assign(rows, 0);
    request.utf8_high.assign(rows, 0);
  }
  for (int r = 0; r < rows; ++r) {
    const int sentence = row_sentences[r];
    if (!rules.after_prefix(sentence, step)) continue;
    const Template* t = rules.use_templates ? rules.templates[sentence] : nullptr;
    if (t) {
      RowMask mask = t->row_mask(beam.places[r], rules.cfg.end_id);
      request.classes[r] = mask.classes;
      request.deny[r] = std::move(mask.deny);
      request.allow[r] = std::move(mask.allow);
    }
    if (rules.utf8.active())
      rules.utf8.row_rule(beam.sequences[r], step + 1 == rules.caps[sentence], request.utf8_mode[r],
                          request.utf8_low[r], request.utf8_high[r]);
  }
  step_rewards(rules, beam, row_sentences, step, reward, sums);
  request.reward_keys.clear();
  request.reward_values.clear();
  for (size_t r = 0; r < reward.per_row.size(); ++r) {
    for (const auto& [token, value] : reward.per_row[r]) {
      request.reward_keys.push_back(static_cast<int64_t>(r) * vocab + token);
      request.reward_values.push_back(value);
    }
  }
}

// run_search over an engine that ranks on its device: the same rules, stated each step as a
// StepRequest; only the candidates come back.
inline std::vector<std::vector<Closed>> run_search_ranked(
    CandidateProvider& provider, int batch, const std::vector<int>& caps, const SearchConfig& cfg,
    const std::vector<const RewardTable*>& rewards, const std::vector<std::vector<int>>& prefixes,
    const std::vector<const Template*>& templates) {
  SearchRun run(batch, caps, cfg, rewards, prefixes, templates);
  Beam& beam = run.beam;
  StepRequest request;
  for (int step = 0; step < run.longest; ++step) {
    const std::vector<int> row_sentences = beam.row_sentences();
    state_rules(run.rules, beam, row_sentences, step, run.reward, run.sums, request);
    RankedStep found = provider.rank(step == 0 ? nullptr : beam.parents.data(), row_sentences,
                                     beam.last_ids, step < cfg.min_length, request);
    StepScores scores;
    scores.vocab = cfg.vocab;
    scores.first_column = std::move(found.first_column);
    const int64_t span = static_cast<int64_t>(beam.rows_per) * cfg.vocab;
    std::vector<std::pair<int64_t, float>> cells;
    size_t at = 0;
    for (size_t g = 0; g < found.tops.size(); ++g)
      for (const auto& c : found.tops[g])
        cells.emplace_back(static_cast<int64_t>(g) * span + c.flat, found.log_probs[at++]);
    std::sort(cells.begin(), cells.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, value] : cells) {
      scores.keys.push_back(key);
      scores.values.push_back(value);
    }
    if (!run.advance(scores, found.tops, step)) break;
  }
  return beam.closed;
}

// A step provider that asks Python (tests: the compiled search over another engine's steps).

}  // namespace tm_guide_fused
