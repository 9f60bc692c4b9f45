// Valid UTF-8 by construction over byte-fallback pieces: tm_guide/decoding/utf8.py's rule.
#pragma once

#include <limits>
#include <vector>

namespace tm_guide_fused {

class Utf8Rule {
 public:
  // id_of_byte[b]: the id of the piece <0xB>, -1 where the vocabulary has none
  Utf8Rule(const std::vector<int>& id_of_byte, int vocab) : id_of_byte_(id_of_byte) {
    byte_of_id_.assign(vocab, -1);
    for (int b = 0; b < static_cast<int>(id_of_byte.size()); ++b) {
      const int id = id_of_byte[b];
      if (id < 0 || id >= vocab) continue;
      byte_of_id_[id] = b;
      active_ = true;
      if (b >= 0x80 && b <= 0xBF) continuation_.push_back(id);
      if (b == 0xC0 || b == 0xC1 || b >= 0xF5) never_.push_back(id);
      if (b >= 0xC2 && b <= 0xF4) leads_.push_back(id);
    }
  }

  bool active() const { return active_; }

  // The rule for the row that ends `sequence` (utf8.py's row_rule): mode kOwed with the
  // lowest and highest byte allowed, kLast or kPlain.
  void row_rule(const std::vector<int>& sequence, bool last_step, int& mode, int& low,
                int& high) const {
    int owed = 0;
    low = high = 0;
    pending(sequence, owed, low, high);
    mode = owed ? kOwed : (last_step ? kLast : kPlain);
    if (!owed) low = high = 0;
  }

  static constexpr int kPlain = 1, kLast = 2, kOwed = 3;  // utf8.py's PLAIN, LAST, OWED

  // Sets to -inf every piece that would make `sequence` invalid UTF-8 (utf8.py's mask).
  void mask(const std::vector<int>& sequence, float* log_probs, int vocab, bool last_step) const {
    constexpr float dead = -std::numeric_limits<float>::infinity();
    int owed = 0, low = 0, high = 0;
    pending(sequence, owed, low, high);
    if (owed) {
      std::vector<float> kept;
      std::vector<int> allowed;
      for (int b = low; b <= high; ++b) {
        const int id = id_of_byte_[b];
        if (id >= 0 && id < vocab) {
          allowed.push_back(id);
          kept.push_back(log_probs[id]);
        }
      }
      for (int v = 0; v < vocab; ++v) log_probs[v] = dead;
      for (size_t i = 0; i < allowed.size(); ++i) log_probs[allowed[i]] = kept[i];
      return;
    }
    for (int id : continuation_) log_probs[id] = dead;
    for (int id : never_) log_probs[id] = dead;
    if (last_step)
      for (int id : leads_) log_probs[id] = dead;
  }

 private:
  static int need(int lead) {
    if (lead >= 0xC2 && lead <= 0xDF) return 1;
    if (lead >= 0xE0 && lead <= 0xEF) return 2;
    if (lead >= 0xF0 && lead <= 0xF4) return 3;
    return 0;
  }

  void pending(const std::vector<int>& sequence, int& owed, int& low, int& high) const {
    owed = low = high = 0;
    int trailing = 0;
    int i = static_cast<int>(sequence.size()) - 1;
    while (i >= 0 && trailing < 3) {
      const int b = byte_of_id_[sequence[i]];
      if (b < 0x80 || b > 0xBF) break;
      ++trailing;
      --i;
    }
    if (i < 0) return;
    const int lead = byte_of_id_[sequence[i]];
    const int n = need(lead);
    if (n <= trailing) return;
    low = 0x80;
    high = 0xBF;
    if (trailing == 0) {
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    owed = n - trailing;
  }

  std::vector<int> id_of_byte_;
  std::vector<int> byte_of_id_;
  std::vector<int> continuation_, never_, leads_;
  bool active_ = false;
};

}  // namespace tm_guide_fused
