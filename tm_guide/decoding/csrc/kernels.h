// Int8 products (AVX-512 VNNI or portable), and the vectorized reductions the layers use.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define TMG_X86 1
#endif

namespace tm_guide_fused {

inline bool cpu_has_vnni() {
#if defined(TMG_X86) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

inline bool use_vnni = cpu_has_vnni();  // also gates the other AVX-512 loops

// Weights are packed for VNNI: blocks of 16 output rows; within a block, for each group of 4
// inputs, the 16 rows' 4 int8 values (64 bytes), so that one vpdpbusd with 4 broadcast
// activation bytes adds 4 products to each of 16 outputs: no horizontal sums.
// packed[(block * (kp / 4) + group) * 64 + row_in_block * 4 + j] = W[block * 16 + row, group * 4 +
// j]
inline std::vector<int8_t> pack_weights(const int8_t* w, int out, int in, int kp) {
  const int blocks = (out + 15) / 16;
  std::vector<int8_t> packed(static_cast<size_t>(blocks) * 16 * kp, 0);
  for (int n = 0; n < out; ++n)
    for (int k = 0; k < in; ++k)
      packed[(static_cast<size_t>(n / 16) * (kp / 4) + k / 4) * 64 + (n % 16) * 4 + k % 4] =
          w[static_cast<size_t>(n) * in + k];
  return packed;
}

// What turns a row's int32 products into floats: y[m, n] = (c - 128 * column_sum[n]) *
// (row_scale[m] * inverse_scale[n]) + bias[n] (no bias when null).
struct Epilogue {
  const int32_t* column_sum;
  const float* inverse_scale;
  const float* bias;
  const float* row_scale;
};

inline float dequantize(int32_t c, int m, int n, const Epilogue& e) {
  float y = static_cast<float>(c - 128 * e.column_sum[n]) * (e.row_scale[m] * e.inverse_scale[n]);
  return e.bias ? y + e.bias[n] : y;
}

// Y[m, n] = sum_k A[m, k] * W[n, k], dequantized: A [rows, kp] as u8 (the int8 values + 128),
// W packed.
inline void gemm_portable(const uint8_t* a, int m_rows, const int8_t* packed, int n_cols, int kp,
                          const Epilogue& e, float* y) {
  const int groups = kp / 4;
  for (int m = 0; m < m_rows; ++m) {
    const uint8_t* arow = a + static_cast<size_t>(m) * kp;
    for (int n = 0; n < n_cols; ++n) {
      const int8_t* block = packed + static_cast<size_t>(n / 16) * groups * 64 + (n % 16) * 4;
      int32_t sum = 0;
      for (int g = 0; g < groups; ++g)
        for (int j = 0; j < 4; ++j)
          sum += static_cast<int32_t>(arow[g * 4 + j]) * block[g * 64 + j];
      y[static_cast<size_t>(m) * n_cols + n] = dequantize(sum, m, n, e);
    }
  }
}

#ifdef TMG_X86
template <int MB, int NB>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void vnni_tile(
    const uint8_t* a, int kp, const int8_t* w, int n0, int n_cols, const Epilogue& e, int m0,
    float* y) {
  const int groups = kp / 4;
  const size_t block_stride = static_cast<size_t>(groups) * 64;
  __m512i acc[MB][NB];
  for (int i = 0; i < MB; ++i)
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_si512();
  for (int g = 0; g < groups; ++g) {
    __m512i wv[NB];
    for (int j = 0; j < NB; ++j) wv[j] = _mm512_loadu_si512(w + j * block_stride + g * 64);
    for (int i = 0; i < MB; ++i) {
      int32_t four;
      std::memcpy(&four, a + static_cast<size_t>(i) * kp + g * 4, 4);
      const __m512i x = _mm512_set1_epi32(four);
      for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], x, wv[j]);
    }
  }
  for (int j = 0; j < NB; ++j) {
    const int col = n0 + j * 16;
    const int valid = std::min(16, n_cols - col);
    const __mmask16 mask = static_cast<__mmask16>((1u << valid) - 1u);
    const __m512i shift = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(mask, e.column_sum + col), 7);
    const __m512 scales = _mm512_maskz_loadu_ps(mask, e.inverse_scale + col);
    const __m512 bias = e.bias ? _mm512_maskz_loadu_ps(mask, e.bias + col) : _mm512_setzero_ps();
    for (int i = 0; i < MB; ++i) {
      const __m512 products = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[i][j], shift));
      __m512 out =
          _mm512_mul_ps(products, _mm512_mul_ps(_mm512_set1_ps(e.row_scale[m0 + i]), scales));
      if (e.bias) out = _mm512_add_ps(out, bias);
      _mm512_mask_storeu_ps(y + static_cast<size_t>(i) * n_cols + col, mask, out);
    }
  }
}

template <int NB>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void vnni_rows(
    const uint8_t* a, int rows, int kp, const int8_t* w, int n0, int n_cols, const Epilogue& e,
    int m0, float* y) {
  switch (rows) {
    case 1: return vnni_tile<1, NB>(a, kp, w, n0, n_cols, e, m0, y);
    case 2: return vnni_tile<2, NB>(a, kp, w, n0, n_cols, e, m0, y);
    case 3: return vnni_tile<3, NB>(a, kp, w, n0, n_cols, e, m0, y);
    case 4: return vnni_tile<4, NB>(a, kp, w, n0, n_cols, e, m0, y);
    case 5: return vnni_tile<5, NB>(a, kp, w, n0, n_cols, e, m0, y);
    case 6: return vnni_tile<6, NB>(a, kp, w, n0, n_cols, e, m0, y);
    case 7: return vnni_tile<7, NB>(a, kp, w, n0, n_cols, e, m0, y);
    default: return vnni_tile<8, NB>(a, kp, w, n0, n_cols, e, m0, y);
  }
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void gemm_vnni(
    const uint8_t* a, int m_rows, const int8_t* packed, int n_cols, int kp, const Epilogue& e,
    float* y) {
  const int blocks = (n_cols + 15) / 16;
  const size_t block_stride = static_cast<size_t>(kp / 4) * 64;
  // two blocks (32 outputs) at a time; each tile's weights stay in L1 while all rows pass
  for (int block = 0; block < blocks; block += 2) {
    const int8_t* w = packed + block * block_stride;
    const bool pair = block + 1 < blocks;
    for (int m = 0; m < m_rows; m += 8) {
      const int rows = std::min(8, m_rows - m);
      const uint8_t* am = a + static_cast<size_t>(m) * kp;
      float* ym = y + static_cast<size_t>(m) * n_cols;
      if (pair)
        vnni_rows<2>(am, rows, kp, w, block * 16, n_cols, e, m, ym);
      else
        vnni_rows<1>(am, rows, kp, w, block * 16, n_cols, e, m, ym);
    }
  }
}

// exp(x - shift) for one value, by the same operations, in the same order, as each lane of
// sum_exp_avx512 (no fused multiply-adds: the build does not contract a * b + c either), so
// that both paths give the same bits. Range reduction by ln 2 in two parts, Cephes's
// polynomial.
inline float exp_shifted(float x, float shift) {
  const float v = std::max(x - shift, -87.0f);
  const float k = std::nearbyint(v * 1.44269504088896341f);
  float r = v - k * 0.693359375f;
  r = r - k * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + (r + 1.0f);
  return std::ldexp(p, static_cast<int>(k));
}

// The sum of 16 partial sums, in one fixed order (the AVX-512 and portable paths both end here).
inline float sum_lanes(const float* lanes) {
  float half[8], quarter[4];
  for (int i = 0; i < 8; ++i) half[i] = lanes[i] + lanes[i + 8];
  for (int i = 0; i < 4; ++i) quarter[i] = half[i] + half[i + 4];
  return (quarter[0] + quarter[2]) + (quarter[1] + quarter[3]);
}

// Sum of term(i) for i < n in the fixed order: 16 lanes over the row, sum_lanes, then the tail.
template <typename Term>
inline float sum_in_lanes(int n, Term term) {
  float lanes[16] = {};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) lanes[l] += term(i + l);
  float sum = sum_lanes(lanes);
  for (; i < n; ++i) sum += term(i);
  return sum;
}

// One Horner step, p * r + c, as exp_shifted takes it.
__attribute__((target("avx512f"))) static __m512 step(__m512 p, __m512 r, float c) {
  return _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
}

// Sum of exp(x[i] - shift) over a row.
__attribute__((target("avx512f"))) static float sum_exp_avx512(const float* x, int n, float shift) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f);
  const __m512 ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  const __m512 lo = _mm512_set1_ps(-87.0f);
  const __m512 vshift = _mm512_set1_ps(shift);
  __m512 total = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_max_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vshift), lo);
    const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(v, log2e), _MM_FROUND_TO_NEAREST_INT);
    __m512 r = _mm512_sub_ps(v, _mm512_mul_ps(k, ln2_hi));
    r = _mm512_sub_ps(r, _mm512_mul_ps(k, ln2_lo));
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = step(p, r, 1.3981999507e-3f);
    p = step(p, r, 8.3334519073e-3f);
    p = step(p, r, 4.1665795894e-2f);
    p = step(p, r, 1.6666665459e-1f);
    p = step(p, r, 5.0000001201e-1f);
    p = _mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)),
                      _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    total = _mm512_add_ps(total, _mm512_scalef_ps(p, k));
  }
  float lanes[16];
  _mm512_storeu_ps(lanes, total);
  float sum = sum_lanes(lanes);
  for (; i < n; ++i) sum += exp_shifted(x[i], shift);
  return sum;
}
#endif

inline void gemm(const uint8_t* a, int m_rows, const int8_t* b, int n_cols, int kp,
                 const Epilogue& e, float* y) {
#ifdef TMG_X86
  if (use_vnni) return gemm_vnni(a, m_rows, b, n_cols, kp, e, y);
#endif
  gemm_portable(a, m_rows, b, n_cols, kp, e, y);
}

inline float sum_exp(const float* x, int n, float shift) {
#ifdef TMG_X86
  if (use_vnni) return sum_exp_avx512(x, n, shift);
#endif
  return sum_in_lanes(n, [&](int i) { return exp_shifted(x[i], shift); });
}

inline int padded(int k) { return (k + 63) / 64 * 64; }

// Reductions: their summation order is fixed by the code, not by the batch or the CPU: 16 lanes
// over the row, then sum_lanes, then the tail in order. A row's result therefore depends neither
// on its batchmates nor on whether the AVX-512 or the portable path runs.
#ifdef TMG_X86
__attribute__((target("avx512f"))) static float dot_avx512(const float* a, const float* b, int n) {
  __m512 acc = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16)
    acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  float lanes[16];
  _mm512_storeu_ps(lanes, acc);
  float sum = sum_lanes(lanes);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

__attribute__((target("avx512f"))) static float max_avx512(const float* x, int n) {
  __m512 top = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + 16 <= n; i += 16) top = _mm512_max_ps(top, _mm512_loadu_ps(x + i));
  float result = _mm512_reduce_max_ps(top);
  for (; i < n; ++i) result = std::max(result, x[i]);
  return result;
}
#endif

inline float dot(const float* a, const float* b, int n) {
#ifdef TMG_X86
  if (use_vnni) return dot_avx512(a, b, n);
#endif
  return sum_in_lanes(n, [&](int i) { return a[i] * b[i]; });
}

inline float max_of(const float* x, int n) {
#ifdef TMG_X86
  if (use_vnni) return max_avx512(x, n);
#endif
  float top = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) top = std::max(top, x[i]);
  return top;
}

}  // namespace tm_guide_fused
