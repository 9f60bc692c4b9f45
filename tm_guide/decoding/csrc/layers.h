// Int8 linear layers, layer norm, activations and one head's attention.
#pragma once

#include <pybind11/numpy.h>

#include <stdexcept>

#include "kernels.h"

namespace tm_guide_fused {

namespace py = pybind11;

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Int8Array = py::array_t<int8_t, py::array::c_style | py::array::forcecast>;

struct Scratch {
  AlignedVector<uint8_t> quantized;
  Floats inverse_scales;
  int threads = 1;  // the products' threads (kernels.h gemm)
};

struct Linear {
  int out = 0, in = 0, kp = 0;
  AlignedVector<int8_t> weight;     // packed (pack_weights)
  Floats inverse_scale;             // 1 / CTranslate2's scale (float weight = int8 / scale)
  std::vector<int32_t> column_sum;  // sum_k weight[n, k], for the +128 shift
  Floats bias;                      // empty: none

  Linear() = default;
  Linear(const Int8Array& w, const FloatArray& scale, py::object bias_or_none) {
    if (w.ndim() != 2) throw std::invalid_argument("linear weight must be 2-D");
    out = static_cast<int>(w.shape(0));
    in = static_cast<int>(w.shape(1));
    kp = padded(in);
    if (scale.size() != out) throw std::invalid_argument("one weight scale per output row");
    const int8_t* src = w.data();
    weight = pack_weights(src, out, in, kp);
    column_sum.assign(out, 0);
    for (int n = 0; n < out; ++n)
      for (int k = 0; k < in; ++k) column_sum[n] += src[static_cast<size_t>(n) * in + k];
    inverse_scale.resize(out);
    for (int n = 0; n < out; ++n) inverse_scale[n] = 1.0f / scale.data()[n];
    if (!bias_or_none.is_none()) {
      FloatArray b = bias_or_none.cast<FloatArray>();
      if (b.size() != out) throw std::invalid_argument("linear bias size");
      bias.assign(b.data(), b.data() + out);
    }
  }

  // y [rows, out] = x [rows, in] W^T + b
  void apply(const float* x, int rows, float* y, Scratch& s) const {
    s.quantized.resize(static_cast<size_t>(rows) * kp);
    s.inverse_scales.resize(rows);
    const int n = in;  // a local: the byte stores below may alias a member, not a local
    for_each_row(rows, s.threads, [&](int m) {
      const float* row = x + static_cast<size_t>(m) * n;
      float amax = 0.0f;
#pragma omp simd reduction(max : amax)
      for (int k = 0; k < n; ++k) amax = std::max(amax, std::fabs(row[k]));
      const float scale = amax > 0.0f ? 127.0f / amax : 1.0f;
      uint8_t* q = s.quantized.data() + static_cast<size_t>(m) * kp;
#pragma omp simd
      for (int k = 0; k < n; ++k) {
        // to nearest, ties even (as lrint), clamped while a float and by comparisons (std::min
        // and std::max take references, which keeps the loop from vectorizing); a NaN becomes
        // -127, as it did through lrint
        float v = std::nearbyint(row[k] * scale);
        v = v > -127.0f ? v : -127.0f;
        v = v < 127.0f ? v : 127.0f;
        q[k] = static_cast<uint8_t>(static_cast<int>(v) + 128);
      }
      std::memset(q + n, 128, kp - n);
      s.inverse_scales[m] = 1.0f / scale;
    });
    const Epilogue e{column_sum.data(), inverse_scale.data(), bias.empty() ? nullptr : bias.data(),
                     s.inverse_scales.data()};
    gemm(s.quantized.data(), rows, weight.data(), out, kp, e, y, s.threads);
  }
};

struct Norm {
  Floats gamma, beta;
  float eps = 1e-5f;
  bool present() const { return !gamma.empty(); }
  // Each row normalized on its own (on up to `threads` threads: the same bits on any count).
  void apply(float* x, int rows, int depth, int threads) const {
    for_each_row(rows, depth, threads,
                 [&](int m) { apply_row(x + static_cast<size_t>(m) * depth, depth); });
  }
  void apply_row(float* row, int depth) const {
    const float mu = sum_in_lanes(depth, [&](int k) { return row[k]; }) / depth;
    const float squares =
        sum_in_lanes(depth, [&](int k) { return (row[k] - mu) * (row[k] - mu); });
    const float inv = 1.0f / std::sqrt(squares / depth + eps);
#pragma omp simd
    for (int k = 0; k < depth; ++k) row[k] = (row[k] - mu) * inv * gamma[k] + beta[k];
  }
};

template <typename F>
inline void each(float* x, size_t n, F f) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) x[i] = f(x[i]);
}

inline void activate_row(float* x, size_t n, int code) {
  switch (code) {
    case 0: return each(x, n, [](float v) { return v > 0.0f ? v : 0.0f; });
    case 1:
      return each(x, n, [](float v) {
        return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
      });
    case 2: return each(x, n, [](float v) { return v / (1.0f + std::exp(-v)); });
    case 3:
      return each(x, n, [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678f)); });
    case 4: return each(x, n, [](float v) { return v / (1.0f + std::exp(-1.702f * v)); });
    case 5: return each(x, n, [](float v) { return std::tanh(v); });
    default: return each(x, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
  }
}

// The activation `code` over [rows, width], rows shared out on up to `threads` threads.
inline void activate(float* x, int rows, int width, int code, int threads) {
  for_each_row(rows, width, threads,
               [&](int r) { activate_row(x + static_cast<size_t>(r) * width, width, code); });
}

// softmax((query * scale) . keys) . values over `length` positions of one head; key/value of
// position j at key(j) / value(j). `q` and `weights` are scratch.
template <typename KeyAt, typename ValueAt>
inline void attend(const float* query, float scale, int length, int head_dim, KeyAt key,
                   ValueAt value, float* out, Floats& q, Floats& weights) {
  std::fill(out, out + head_dim, 0.0f);
  if (length == 0) return;  // nothing to attend to (an empty source)
  q.resize(head_dim);
  for (int d = 0; d < head_dim; ++d) q[d] = query[d] * scale;
  weights.resize(length);
  float top = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < length; ++j) {
    weights[j] = dot(q.data(), key(j), head_dim);
    top = std::max(top, weights[j]);
  }
  float total = 0.0f;
  for (int j = 0; j < length; ++j) {
    weights[j] = std::exp(weights[j] - top);
    total += weights[j];
  }
  for (int j = 0; j < length; ++j) {
    const float w = weights[j] / total;
    const float* v = value(j);
#pragma omp simd
    for (int d = 0; d < head_dim; ++d) out[d] += w * v[d];
  }
}

// Columns [offset, offset + width) of a row-major [rows, stride] matrix, as [rows, width]; rows
// copied on up to `threads` threads (a fresh buffer's pages are faulted in where they are written).
inline Floats columns(const float* x, int rows, int stride, int offset, int width,
                      int threads) {
  Floats out(static_cast<size_t>(rows) * width);
  for_each_row(rows, width, threads, [&](int r) {
    std::memcpy(out.data() + static_cast<size_t>(r) * width,
                x + static_cast<size_t>(r) * stride + offset, width * sizeof(float));
  });
  return out;
}

}  // namespace tm_guide_fused
