// Translation pieces as lookup tables (tm_guide.decoding.rewards.PieceReward).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace tm_guide_fused {

struct Gram {
  std::array<int32_t, 8> ids{-1, -1, -1, -1, -1, -1, -1, -1};
  bool operator==(const Gram& o) const { return ids == o.ids; }
};
struct GramHash {
  size_t operator()(const Gram& g) const {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t v : g.ids) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

inline Gram make_gram(const int* ids, int n) {
  Gram g;
  for (int i = 0; i < n; ++i) g.ids[i] = ids[i];
  return g;
}

class RewardTable {
 public:
  struct Entry {
    int slot;      // index into rewarded ids
    double score;  // D_X of context + token
    int piece;     // id of the n-gram when it has a limit (limit(piece) times), else -1
  };

  // limits[i]: how often ngrams[i] is rewarded when repeats are off (0: every time); without
  // them, a piece of two or more tokens once and a single token every time (pieces once)
  RewardTable(const std::vector<std::pair<std::vector<int>, double>>& ngrams, int max_n, int vocab,
              const std::vector<int>& limits = {})
      : max_n_(max_n) {
    if (max_n < 1 || max_n > 8) throw std::invalid_argument("max_n must be 1..8");
    if (!limits.empty() && limits.size() != ngrams.size())
      throw std::invalid_argument("one limit per n-gram");
    for (const auto& item : ngrams) {
      if (item.first.empty()) throw std::invalid_argument("empty n-gram");
      for (int id : item.first)
        if (id < 0 || id >= vocab) throw std::invalid_argument("n-gram id outside the vocabulary");
      rewarded_.push_back(item.first.back());
    }
    std::sort(rewarded_.begin(), rewarded_.end());
    rewarded_.erase(std::unique(rewarded_.begin(), rewarded_.end()), rewarded_.end());
    for (size_t i = 0; i < ngrams.size(); ++i) {
      const auto& [gram, score] = ngrams[i];
      const int n = static_cast<int>(gram.size());
      if (n < 1 || n > max_n) throw std::invalid_argument("n-gram longer than max_n");
      const int slot = static_cast<int>(
          std::lower_bound(rewarded_.begin(), rewarded_.end(), gram.back()) - rewarded_.begin());
      const int limit = limits.empty() ? (n >= 2 ? 1 : 0) : limits[i];
      if (limit < 0) throw std::invalid_argument("a limit must be >= 0");
      int piece = -1;
      if (limit > 0) {
        piece = static_cast<int>(limits_.size());
        limits_.push_back(limit);
        pieces_.emplace(make_gram(gram.data(), n), piece);
      }
      by_context_[make_gram(gram.data(), n - 1)].push_back({slot, score, piece});
    }
  }

  int max_n() const { return max_n_; }
  const std::vector<int>& rewarded() const { return rewarded_; }

  const std::vector<Entry>* after(const int* context, int n) const {
    auto it = by_context_.find(make_gram(context, n));
    return it == by_context_.end() ? nullptr : &it->second;
  }

  int piece(const int* ids, int n) const {
    auto it = pieces_.find(make_gram(ids, n));
    return it == pieces_.end() ? -1 : it->second;
  }

  int limit(int piece) const { return limits_[static_cast<size_t>(piece)]; }

 private:
  int max_n_;
  std::vector<int> limits_;  // per piece id
  std::vector<int> rewarded_;
  std::unordered_map<Gram, std::vector<Entry>, GramHash> by_context_;
  std::unordered_map<Gram, int, GramHash> pieces_;
};

}  // namespace tm_guide_fused
