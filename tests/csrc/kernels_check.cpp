// Every kernel path this CPU runs against the portable loops, to the bit: int8 products with
// their epilogue, exp sums, dot products, maxima and top_k's filter, on random inputs whose sizes
// leave tails. Built and run by tests/decoding/test_kernel_paths.py, natively and, for NEON,
// cross-compiled for AArch64 and run under QEMU user emulation. Prints one line per path; exits
// 1 at the first difference.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "../../tm_guide/decoding/csrc/kernels.h"

using namespace tm_guide_fused;

namespace {

std::mt19937 rng(20181);

float uniform(float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); }
int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

struct Case {
  int rows, out, in, kp;
  std::vector<uint8_t> a;
  AlignedVector<int8_t> packed;
  std::vector<int32_t> column_sum;
  std::vector<float> inverse_scale, bias, row_scale;
  std::vector<float> floats, others;
};

Case make_case() {
  Case c;
  c.rows = integer(1, 11);
  c.out = integer(1, 70);
  c.in = integer(1, 200);
  c.kp = padded(c.in);
  c.a.assign(static_cast<size_t>(c.rows) * c.kp, 128);
  for (int m = 0; m < c.rows; ++m)
    for (int k = 0; k < c.in; ++k) c.a[static_cast<size_t>(m) * c.kp + k] = integer(1, 255);
  std::vector<int8_t> w(static_cast<size_t>(c.out) * c.in);
  for (auto& v : w) v = static_cast<int8_t>(integer(-127, 127));
  c.packed = pack_weights(w.data(), c.out, c.in, c.kp);
  c.column_sum.assign(c.out, 0);
  for (int n = 0; n < c.out; ++n)
    for (int k = 0; k < c.in; ++k) c.column_sum[n] += w[static_cast<size_t>(n) * c.in + k];
  for (int n = 0; n < c.out; ++n) {
    c.inverse_scale.push_back(uniform(1e-4f, 1e-2f));
    c.bias.push_back(uniform(-1.0f, 1.0f));
  }
  for (int m = 0; m < c.rows; ++m) c.row_scale.push_back(uniform(1e-3f, 1e-1f));
  const int n = integer(1, 300);
  for (int i = 0; i < n; ++i) {
    c.floats.push_back(uniform(-30.0f, 12.0f));
    c.others.push_back(uniform(-3.0f, 3.0f));
  }
  if (n > 3) c.floats[n / 3] = -std::numeric_limits<float>::infinity();  // a masked token
  return c;
}

struct Results {
  std::vector<float> products, unbiased;
  float exp_sum, dot_value, top;
  std::vector<uint32_t> masks;
};

Results run(const Case& c) {
  Results r;
  r.products.assign(static_cast<size_t>(c.rows) * c.out, 0.0f);
  r.unbiased = r.products;
  const Epilogue with{c.column_sum.data(), c.inverse_scale.data(), c.bias.data(),
                      c.row_scale.data()};
  const Epilogue without{c.column_sum.data(), c.inverse_scale.data(), nullptr, c.row_scale.data()};
  gemm(c.a.data(), c.rows, c.packed.data(), c.out, c.kp, with, r.products.data());
  gemm(c.a.data(), c.rows, c.packed.data(), c.out, c.kp, without, r.unbiased.data());
  const int n = static_cast<int>(c.floats.size());
  r.top = max_of(c.floats.data(), n);
  r.exp_sum = sum_exp(c.floats.data(), n, r.top);
  r.dot_value = dot(c.floats.data() + (n > 1), c.others.data(), n - (n > 1));
  for (int u = 0; u + 16 <= n; u += 16)
    r.masks.push_back(above16(c.floats.data() + u, 0.5f, c.floats[0]));
  return r;
}

bool same_bits(const void* x, const void* y, size_t bytes) { return std::memcmp(x, y, bytes) == 0; }

bool same(const Results& x, const Results& y) {
  return x.products.size() == y.products.size() &&
         same_bits(x.products.data(), y.products.data(), x.products.size() * sizeof(float)) &&
         same_bits(x.unbiased.data(), y.unbiased.data(), x.unbiased.size() * sizeof(float)) &&
         same_bits(&x.exp_sum, &y.exp_sum, sizeof(float)) &&
         same_bits(&x.dot_value, &y.dot_value, sizeof(float)) &&
         same_bits(&x.top, &y.top, sizeof(float)) && x.masks == y.masks;
}

}  // namespace

int main() {
  const int cases = 400;
  std::vector<Case> all;
  for (int i = 0; i < cases; ++i) all.push_back(make_case());
  active_kernel = Kernel::portable;
  std::vector<Results> expected;
  for (const auto& c : all) expected.push_back(run(c));
  for (Kernel k : kAllKernels) {
    if (k == Kernel::portable || !kernel_supported(k)) continue;
    active_kernel = k;
    for (int i = 0; i < cases; ++i)
      if (!same(run(all[i]), expected[i])) {
        std::printf("%s: case %d differs from the portable loops\n", kernel_name(k), i);
        return 1;
      }
    std::printf("%s: %d cases, the portable loops' bits\n", kernel_name(k), cases);
  }
  std::printf("best: %s\n", kernel_name(best_kernel()));
  return 0;
}
