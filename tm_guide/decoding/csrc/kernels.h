// Int8 products and the float reductions the layers use, on five kernel paths chosen at run time:
// AVX-512 VNNI, AVX2 (x86-64-v3), NEON with the dot product extension (ARMv8.2+: Graviton 2 and
// later, Ampere, Apple, Cortex-A76 and later), NEON (every AArch64 CPU) and portable loops. Every
// path computes the same integers and the same float operations in the same order, so a sentence
// gets the same translation, to the bit, whichever path the CPU takes
// (tests/decoding/test_fused.py and tests/csrc/kernels_check.cpp hold this).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define TMG_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define TMG_NEON 1
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif
#endif

namespace tm_guide_fused {

// Storage on 64-byte (cache line) boundaries for what the kernels load whole vectors from: with
// malloc's 16-byte alignment a 32- or 64-byte load may straddle two lines, and whether it does
// changed with each allocation, which made the AVX2 products' time vary by a third run to run.
// The elements a resize() adds are not initialized (see construct).
template <typename T>
struct CacheAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  CacheAligned() = default;
  template <typename U>
  CacheAligned(const CacheAligned<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }
  // resize() leaves new elements uninitialized: every buffer is written whole before it is read,
  // and zero-filling a step's outputs first would touch all their pages on one thread.
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const CacheAligned<U>&) const { return true; }
  template <typename U>
  bool operator!=(const CacheAligned<U>&) const { return false; }
};
template <typename T>
using AlignedVector = std::vector<T, CacheAligned<T>>;
using Floats = AlignedVector<float>;  // activations, weights and scratch the float kernels read

enum class Kernel { portable, avx2, avx512_vnni, neon, neon_dotprod };

// Every path, fastest first (the portable loops last).
inline constexpr Kernel kAllKernels[] = {Kernel::avx512_vnni, Kernel::avx2, Kernel::neon_dotprod,
                                         Kernel::neon, Kernel::portable};

inline const char* kernel_name(Kernel k) {
  switch (k) {
    case Kernel::avx2: return "avx2";
    case Kernel::avx512_vnni: return "avx512-vnni";
    case Kernel::neon: return "neon";
    case Kernel::neon_dotprod: return "neon-dotprod";
    default: return "portable";
  }
}

// Whether this CPU runs the kernel path (the portable one runs everywhere).
inline bool kernel_supported(Kernel k) {
  switch (k) {
    case Kernel::portable: return true;
#if defined(TMG_X86) && defined(__GNUC__)
    case Kernel::avx2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2");
    case Kernel::avx512_vnni:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vnni");
#endif
#ifdef TMG_NEON
    case Kernel::neon: return true;  // part of every AArch64 CPU
#if defined(__linux__)
    case Kernel::neon_dotprod: return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
    default: return false;
  }
}

// The fastest path this CPU runs.
inline Kernel best_kernel() {
  for (Kernel k : kAllKernels)
    if (kernel_supported(k)) return k;
  return Kernel::portable;
}

// The float reductions of a path: the dot product path adds only an int8 product.
inline Kernel reductions_of(Kernel k) { return k == Kernel::neon_dotprod ? Kernel::neon : k; }

inline Kernel active_kernel = best_kernel();  // tests switch it to compare the paths

// Weights are packed for VNNI (the other paths read the same layout): blocks of 16 output rows;
// within a block, for each group of 4 inputs, the 16 rows' 4 int8 values (64 bytes), so that one
// vpdpbusd with 4 broadcast activation bytes adds 4 products to each of 16 outputs: no horizontal
// sums. packed[(block * (kp / 4) + group) * 64 + row_in_block * 4 + j] = W[block * 16 + row, group
// * 4 + j]
inline AlignedVector<int8_t> pack_weights(const int8_t* w, int out, int in, int kp) {
  const int blocks = (out + 15) / 16;
  AlignedVector<int8_t> packed(static_cast<size_t>(blocks) * 16 * kp, 0);
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
// W packed; only the outputs of 16-row weight blocks [block_begin, block_end) (the threads of
// one product share the blocks out).
inline void gemm_portable(const uint8_t* a, int m_rows, const int8_t* packed, int n_cols, int kp,
                          const Epilogue& e, float* y, int block_begin, int block_end) {
  const int groups = kp / 4;
  const int n_end = std::min(n_cols, block_end * 16);
  for (int m = 0; m < m_rows; ++m) {
    const uint8_t* arow = a + static_cast<size_t>(m) * kp;
    for (int n = block_begin * 16; n < n_end; ++n) {
      const int8_t* block = packed + static_cast<size_t>(n / 16) * groups * 64 + (n % 16) * 4;
      int32_t sum = 0;
      for (int g = 0; g < groups; ++g)
        for (int j = 0; j < 4; ++j)
          sum += static_cast<int32_t>(arow[g * 4 + j]) * block[g * 64 + j];
      y[static_cast<size_t>(m) * n_cols + n] = dequantize(sum, m, n, e);
    }
  }
}

// exp(x - shift) for one value, by the same operations, in the same order, as each lane of
// sum_exp_avx512 (and its AVX2 and NEON twins) (no fused multiply-adds: the build does not contract
// a * b + c either), so that both paths give the same bits. Range reduction by ln 2 in two parts,
// Cephes's polynomial.
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

// The sum of 16 partial sums, in one fixed order (every path ends here).
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
    float* y, int block_begin, int block_end) {
  const size_t block_stride = static_cast<size_t>(kp / 4) * 64;
  // two blocks (32 outputs) at a time; each tile's weights stay in L1 while all rows pass
  for (int block = block_begin; block < block_end; block += 2) {
    const int8_t* w = packed + block * block_stride;
    const bool pair = block + 1 < block_end;
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

// Reductions: their summation order is fixed by the code, not by the batch or the CPU: 16 lanes
// over the row, then sum_lanes, then the tail in order. A row's result therefore depends neither
// on its batchmates nor on which kernel path runs.
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

// Whether each of 16 totals base + row[i] beats the threshold, as a bit mask (top_k's filter).
__attribute__((target("avx512f"))) static uint32_t above16_avx512(const float* row, float base,
                                                                  float threshold) {
  const __m512 totals = _mm512_add_ps(_mm512_set1_ps(base), _mm512_loadu_ps(row));
  return _mm512_cmp_ps_mask(totals, _mm512_set1_ps(threshold), _CMP_GT_OQ);
}
#endif

// The activations as 16-bit integers, for the AVX2 path (it has no u8 x s8 product into 32 bits
// without 16-bit saturation).
inline const int16_t* widened(const uint8_t* a, size_t n) {
  thread_local AlignedVector<int16_t> wide;
  wide.resize(n);
  for (size_t i = 0; i < n; ++i) wide[i] = static_cast<int16_t>(a[i]);
  return wide.data();
}

#ifdef TMG_X86
// ---- AVX2 (x86-64-v3) ----------------------------------------------------------------------
// The weights are widened to 16 bits as they are loaded and multiplied by vpmaddwd: the same
// integer products as the portable loops (vpmaddubsw would saturate at 16 bits). A group's 64
// weight bytes are 4 quarters of 4 rows x 4 inputs; a quarter's products land as pairs per row,
// which the epilogue adds.
// W is the block's int8 weights, or (Widened) the same weights already widened to 16 bits, once
// per block, so that each pair of rows does not widen them again.
template <int MB, bool Widened, typename W>
__attribute__((target("avx2"))) static void avx2_tile(const int16_t* a, int kp, const W* w, int n0,
                                                      int n_cols, const Epilogue& e, int m0,
                                                      float* y) {
  const int groups = kp / 4;
  __m256i acc[MB][4];
  for (int i = 0; i < MB; ++i)
    for (int q = 0; q < 4; ++q) acc[i][q] = _mm256_setzero_si256();
  for (int g = 0; g < groups; ++g) {
    __m256i wv[4];
    for (int q = 0; q < 4; ++q) {
      const W* quarter = w + static_cast<size_t>(g) * 64 + q * 16;
      if constexpr (Widened)
        wv[q] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(quarter));
      else
        wv[q] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quarter)));
    }
    for (int i = 0; i < MB; ++i) {
      long long four;
      std::memcpy(&four, a + static_cast<size_t>(i) * kp + g * 4, 8);
      const __m256i x = _mm256_set1_epi64x(four);
      for (int q = 0; q < 4; ++q)
        acc[i][q] = _mm256_add_epi32(_mm256_madd_epi16(x, wv[q]), acc[i][q]);
    }
  }
  if (n0 + 16 > n_cols) {  // the last, partial block: one output at a time
    for (int i = 0; i < MB; ++i)
      for (int q = 0; q < 4; ++q) {
        alignas(32) int32_t pairs[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(pairs), acc[i][q]);
        for (int r = 0; r < 4; ++r) {
          const int n = n0 + q * 4 + r;
          if (n < n_cols)
            y[static_cast<size_t>(i) * n_cols + n] =
                dequantize(pairs[2 * r] + pairs[2 * r + 1], m0 + i, n, e);
        }
      }
    return;
  }
  // dequantize's operations, in its order, on 8 outputs at a time
  for (int half = 0; half < 2; ++half) {
    const int col = n0 + half * 8;
    const __m256i shift = _mm256_slli_epi32(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.column_sum + col)), 7);
    const __m256 scales = _mm256_loadu_ps(e.inverse_scale + col);
    for (int i = 0; i < MB; ++i) {
      // pair sums of quarters 2h and 2h+1, back in output order
      const __m256i sums =
          _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[i][2 * half], acc[i][2 * half + 1]), 0xD8);
      const __m256 products = _mm256_cvtepi32_ps(_mm256_sub_epi32(sums, shift));
      __m256 out =
          _mm256_mul_ps(products, _mm256_mul_ps(_mm256_set1_ps(e.row_scale[m0 + i]), scales));
      if (e.bias) out = _mm256_add_ps(out, _mm256_loadu_ps(e.bias + col));
      _mm256_storeu_ps(y + static_cast<size_t>(i) * n_cols + col, out);
    }
  }
}

__attribute__((target("avx2"))) static void gemm_avx2(const int16_t* a, int m_rows,
                                                      const int8_t* packed, int n_cols, int kp,
                                                      const Epilogue& e, float* y, int block_begin,
                                                      int block_end) {
  const size_t block_stride = static_cast<size_t>(kp / 4) * 64;
  // With 4 pairs of rows or more, a block's weights are widened to 16 bits once (kp * 32
  // bytes: in L1 for d_model 512) instead of once per pair; the products are the same.
  thread_local AlignedVector<int16_t> wide_block;
  const bool widen = m_rows >= 8;
  if (widen) wide_block.resize(block_stride);
  for (int block = block_begin; block < block_end; ++block) {
    const int8_t* w = packed + block * block_stride;
    int m = 0;
    if (widen) {
      for (size_t i = 0; i < block_stride; i += 16)
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(wide_block.data() + i),
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + i))));
      for (; m + 2 <= m_rows; m += 2)
        avx2_tile<2, true>(a + static_cast<size_t>(m) * kp, kp, wide_block.data(), block * 16,
                           n_cols, e, m, y + static_cast<size_t>(m) * n_cols);
      if (m < m_rows)
        avx2_tile<1, true>(a + static_cast<size_t>(m) * kp, kp, wide_block.data(), block * 16,
                           n_cols, e, m, y + static_cast<size_t>(m) * n_cols);
      continue;
    }
    for (; m + 2 <= m_rows; m += 2)
      avx2_tile<2, false>(a + static_cast<size_t>(m) * kp, kp, w, block * 16, n_cols, e, m,
                          y + static_cast<size_t>(m) * n_cols);
    if (m < m_rows)
      avx2_tile<1, false>(a + static_cast<size_t>(m) * kp, kp, w, block * 16, n_cols, e, m,
                          y + static_cast<size_t>(m) * n_cols);
  }
}

// exp(x - shift) for 8 values, each lane as exp_shifted computes it. 2^k is built from its
// exponent bits: k is in [-126, 0] because x <= shift (the row's maximum) and v >= -87, where
// p * 2^k rounds once, as ldexp does.
__attribute__((target("avx2"))) static __m256 exp8_avx2(__m256 x, __m256 shift) {
  const __m256 v = _mm256_max_ps(_mm256_sub_ps(x, shift), _mm256_set1_ps(-87.0f));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(v, _mm256_mul_ps(k, _mm256_set1_ps(0.693359375f)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(k, _mm256_set1_ps(-2.12194440e-4f)));
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  for (float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
  p = _mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
}

__attribute__((target("avx2"))) static float sum_exp_avx2(const float* x, int n, float shift) {
  const __m256 vshift = _mm256_set1_ps(shift);
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();  // lanes 0-7 and 8-15
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    low = _mm256_add_ps(low, exp8_avx2(_mm256_loadu_ps(x + i), vshift));
    high = _mm256_add_ps(high, exp8_avx2(_mm256_loadu_ps(x + i + 8), vshift));
  }
  float lanes[16];
  _mm256_storeu_ps(lanes, low);
  _mm256_storeu_ps(lanes + 8, high);
  float sum = sum_lanes(lanes);
  for (; i < n; ++i) sum += exp_shifted(x[i], shift);
  return sum;
}

__attribute__((target("avx2"))) static float dot_avx2(const float* a, const float* b, int n) {
  __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    low = _mm256_add_ps(low, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    high =
        _mm256_add_ps(high, _mm256_mul_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
  }
  float lanes[16];
  _mm256_storeu_ps(lanes, low);
  _mm256_storeu_ps(lanes + 8, high);
  float sum = sum_lanes(lanes);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

__attribute__((target("avx2"))) static float max_avx2(const float* x, int n) {
  __m256 top = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + 8 <= n; i += 8) top = _mm256_max_ps(top, _mm256_loadu_ps(x + i));
  float lanes[8];
  _mm256_storeu_ps(lanes, top);
  float result = lanes[0];
  for (int l = 1; l < 8; ++l) result = std::max(result, lanes[l]);
  for (; i < n; ++i) result = std::max(result, x[i]);
  return result;
}

__attribute__((target("avx2"))) static uint32_t above16_avx2(const float* row, float base,
                                                             float threshold) {
  const __m256 b = _mm256_set1_ps(base), t = _mm256_set1_ps(threshold);
  const __m256 low = _mm256_cmp_ps(_mm256_add_ps(b, _mm256_loadu_ps(row)), t, _CMP_GT_OQ);
  const __m256 high = _mm256_cmp_ps(_mm256_add_ps(b, _mm256_loadu_ps(row + 8)), t, _CMP_GT_OQ);
  return static_cast<uint32_t>(_mm256_movemask_ps(low)) |
         (static_cast<uint32_t>(_mm256_movemask_ps(high)) << 8);
}
#endif

#ifdef TMG_NEON
// ---- NEON (AArch64) ------------------------------------------------------------------------
// Both NEON products multiply signed bytes: the activations go in as their int8 values (u8 - 128,
// `flipped`) and 128 * column_sum is added back, so that dequantize gets the very integer the
// other paths compute. They share their loads (a packed group's 4 weight quarters, a row's 4
// activations broadcast to every 32-bit lane) and that epilogue.
inline void load_quarters(const int8_t* w, int g, int8x16_t wq[4]) {
  for (int q = 0; q < 4; ++q) wq[q] = vld1q_s8(w + static_cast<size_t>(g) * 64 + q * 16);
}

inline int8x16_t broadcast4(const int8_t* row, int g) {
  int32_t four;
  std::memcpy(&four, row + g * 4, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(four));
}

inline void store_signed(const int32_t* lanes, int n0, int n_cols, const Epilogue& e, int m,
                         float* y) {
  for (int r = 0; r < 16 && n0 + r < n_cols; ++r) {
    const int n = n0 + r;
    y[static_cast<size_t>(m) * n_cols + n] = dequantize(lanes[r] + 128 * e.column_sum[n], m, n, e);
  }
}

// Without the dot product extension: smull multiplies 8 signed byte pairs into 16-bit lanes
// (|w x| <= 128 * 128 fits; no two products share a 16-bit lane) and sadalp adds neighbouring
// products into 32-bit lanes, so a quarter of a packed group (4 rows x 4 inputs, the layout sdot
// reads) fills two accumulators, each lane pair holding one row; vpaddq joins the pairs at the
// end. MB rows share each loaded weight quarter (2 x 8 accumulators fill 16 of the 32 vector
// registers).
template <int MB>
static void smull_tile(const int8_t* a, int kp, const int8_t* w, int n0, int n_cols,
                       const Epilogue& e, int m0, float* y) {
  const int groups = kp / 4;
  int32x4_t acc[MB][8];
  for (int i = 0; i < MB; ++i)
    for (int q = 0; q < 8; ++q) acc[i][q] = vdupq_n_s32(0);
  for (int g = 0; g < groups; ++g) {
    int8x16_t wq[4];
    load_quarters(w, g, wq);
    for (int i = 0; i < MB; ++i) {
      const int8x16_t x = broadcast4(a + static_cast<size_t>(i) * kp, g);
      const int8x8_t x_low = vget_low_s8(x);
      for (int q = 0; q < 4; ++q) {
        acc[i][2 * q] = vpadalq_s16(acc[i][2 * q], vmull_s8(vget_low_s8(wq[q]), x_low));
        acc[i][2 * q + 1] = vpadalq_s16(acc[i][2 * q + 1], vmull_high_s8(wq[q], x));
      }
    }
  }
  for (int i = 0; i < MB; ++i) {
    int32_t lanes[16];
    for (int q = 0; q < 4; ++q)
      vst1q_s32(lanes + q * 4, vpaddq_s32(acc[i][2 * q], acc[i][2 * q + 1]));
    store_signed(lanes, n0, n_cols, e, m0 + i, y);
  }
}

static void gemm_neon(const int8_t* a, int m_rows, const int8_t* packed, int n_cols, int kp,
                      const Epilogue& e, float* y, int block_begin, int block_end) {
  const size_t block_stride = static_cast<size_t>(kp / 4) * 64;
  for (int block = block_begin; block < block_end; ++block) {
    const int8_t* w = packed + block * block_stride;
    int m = 0;
    for (; m + 2 <= m_rows; m += 2)
      smull_tile<2>(a + static_cast<size_t>(m) * kp, kp, w, block * 16, n_cols, e, m, y);
    for (; m < m_rows; ++m)
      smull_tile<1>(a + static_cast<size_t>(m) * kp, kp, w, block * 16, n_cols, e, m, y);
  }
}

// With the dot product extension: sdot adds 4 int8 products into each of 4 int32 lanes, and a
// quarter of a packed group is exactly 4 rows x 4 inputs, so one sdot per quarter with the row's
// 4 activations broadcast, like vpdpbusd. MB rows share each loaded weight quarter.
template <int MB>
__attribute__((target("arch=armv8.2-a+dotprod"))) static void dotprod_tile(
    const int8_t* a, int kp, const int8_t* w, int n0, int n_cols, const Epilogue& e, int m0,
    float* y) {
  const int groups = kp / 4;
  int32x4_t acc[MB][4];
  for (int i = 0; i < MB; ++i)
    for (int q = 0; q < 4; ++q) acc[i][q] = vdupq_n_s32(0);
  for (int g = 0; g < groups; ++g) {
    int8x16_t wq[4];
    load_quarters(w, g, wq);
    for (int i = 0; i < MB; ++i) {
      const int8x16_t x = broadcast4(a + static_cast<size_t>(i) * kp, g);
      for (int q = 0; q < 4; ++q) acc[i][q] = vdotq_s32(acc[i][q], wq[q], x);
    }
  }
  for (int i = 0; i < MB; ++i) {
    int32_t lanes[16];
    for (int q = 0; q < 4; ++q) vst1q_s32(lanes + q * 4, acc[i][q]);
    store_signed(lanes, n0, n_cols, e, m0 + i, y);
  }
}

__attribute__((target("arch=armv8.2-a+dotprod"))) static void gemm_neon_dotprod(
    const int8_t* a, int m_rows, const int8_t* packed, int n_cols, int kp, const Epilogue& e,
    float* y, int block_begin, int block_end) {
  const size_t block_stride = static_cast<size_t>(kp / 4) * 64;
  for (int block = block_begin; block < block_end; ++block) {
    const int8_t* w = packed + block * block_stride;
    int m = 0;
    for (; m + 4 <= m_rows; m += 4)
      dotprod_tile<4>(a + static_cast<size_t>(m) * kp, kp, w, block * 16, n_cols, e, m, y);
    for (; m < m_rows; ++m)
      dotprod_tile<1>(a + static_cast<size_t>(m) * kp, kp, w, block * 16, n_cols, e, m, y);
  }
}

// The activations as their int8 values (u8 - 128), for the signed NEON products.
inline const int8_t* flipped(const uint8_t* a, size_t n) {
  thread_local AlignedVector<int8_t> signed_values;
  signed_values.resize(n);
  for (size_t i = 0; i < n; ++i) signed_values[i] = static_cast<int8_t>(a[i] ^ 0x80);
  return signed_values.data();
}

// exp(x - shift) for 4 values, as exp_shifted computes each (see exp8_avx2 for 2^k).
static float32x4_t exp4_neon(float32x4_t x, float32x4_t shift) {
  const float32x4_t v = vmaxq_f32(vsubq_f32(x, shift), vdupq_n_f32(-87.0f));
  const float32x4_t k = vrndnq_f32(vmulq_f32(v, vdupq_n_f32(1.44269504088896341f)));
  float32x4_t r = vsubq_f32(v, vmulq_f32(k, vdupq_n_f32(0.693359375f)));
  r = vsubq_f32(r, vmulq_f32(k, vdupq_n_f32(-2.12194440e-4f)));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  for (float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f})
    p = vaddq_f32(vmulq_f32(p, r), vdupq_n_f32(c));
  p = vaddq_f32(vmulq_f32(p, vmulq_f32(r, r)), vaddq_f32(r, vdupq_n_f32(1.0f)));
  const int32x4_t exponent = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(exponent));
}

// Sum over the row of term4(i) (4 lanes at i) in 16 lanes, then sum_lanes, then the scalar tail.
template <typename Term4, typename Term>
static float sum_neon(int n, Term4 term4, Term term) {
  float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
  int i = 0;
  for (; i + 16 <= n; i += 16)
    for (int j = 0; j < 4; ++j) acc[j] = vaddq_f32(acc[j], term4(i + 4 * j));
  float lanes[16];
  for (int j = 0; j < 4; ++j) vst1q_f32(lanes + 4 * j, acc[j]);
  float sum = sum_lanes(lanes);
  for (; i < n; ++i) sum += term(i);
  return sum;
}

static float sum_exp_neon(const float* x, int n, float shift) {
  const float32x4_t vshift = vdupq_n_f32(shift);
  return sum_neon(
      n, [&](int i) { return exp4_neon(vld1q_f32(x + i), vshift); },
      [&](int i) { return exp_shifted(x[i], shift); });
}

static float dot_neon(const float* a, const float* b, int n) {
  return sum_neon(
      n, [&](int i) { return vmulq_f32(vld1q_f32(a + i), vld1q_f32(b + i)); },
      [&](int i) { return a[i] * b[i]; });
}

static float max_neon(const float* x, int n) {
  float32x4_t top = vdupq_n_f32(-std::numeric_limits<float>::infinity());
  int i = 0;
  for (; i + 4 <= n; i += 4) top = vmaxq_f32(top, vld1q_f32(x + i));
  float result = vmaxvq_f32(top);
  for (; i < n; ++i) result = std::max(result, x[i]);
  return result;
}

static uint32_t above16_neon(const float* row, float base, float threshold) {
  const float32x4_t b = vdupq_n_f32(base), t = vdupq_n_f32(threshold);
  const uint32_t bits_of[4] = {1, 2, 4, 8};
  const uint32x4_t bits = vld1q_u32(bits_of);
  uint32_t mask = 0;
  for (int j = 0; j < 4; ++j) {
    const uint32x4_t gt = vcgtq_f32(vaddq_f32(b, vld1q_f32(row + 4 * j)), t);
    mask |= vaddvq_u32(vandq_u32(gt, bits)) << (4 * j);
  }
  return mask;
}
#endif

// ---- dispatch ---------------------------------------------------------------------------

// Y = A W^T dequantized (see gemm_portable), on the active kernel path and `threads` threads,
// which share out the 16-row weight blocks: every output is computed as on one thread, so the
// bits do not depend on the thread count.
inline void gemm(const uint8_t* a, int m_rows, const int8_t* b, int n_cols, int kp,
                 const Epilogue& e, float* y, int threads = 1) {
  const int blocks = (n_cols + 15) / 16;
  const Kernel kernel = active_kernel;
#ifdef TMG_X86
  const int16_t* wide = nullptr;  // the AVX2 path widens the activations once, here
  if (kernel == Kernel::avx2) wide = widened(a, static_cast<size_t>(m_rows) * kp);
#endif
#ifdef TMG_NEON
  const int8_t* as_signed = nullptr;  // and the NEON paths take them signed
  if (kernel == Kernel::neon || kernel == Kernel::neon_dotprod)
    as_signed = flipped(a, static_cast<size_t>(m_rows) * kp);
#endif
  auto run = [&](int begin, int end) {
    switch (kernel) {
#ifdef TMG_X86
      case Kernel::avx512_vnni: return gemm_vnni(a, m_rows, b, n_cols, kp, e, y, begin, end);
      case Kernel::avx2: return gemm_avx2(wide, m_rows, b, n_cols, kp, e, y, begin, end);
#endif
#ifdef TMG_NEON
      case Kernel::neon: return gemm_neon(as_signed, m_rows, b, n_cols, kp, e, y, begin, end);
      case Kernel::neon_dotprod:
        return gemm_neon_dotprod(as_signed, m_rows, b, n_cols, kp, e, y, begin, end);
#endif
      default: return gemm_portable(a, m_rows, b, n_cols, kp, e, y, begin, end);
    }
  };
  // below ~64k products per thread, starting the threads costs more than they save
  const int64_t work = static_cast<int64_t>(m_rows) * n_cols * kp;
  const int parts = static_cast<int>(std::min<int64_t>({threads, blocks / 2, work >> 16}));
  if (parts <= 1) return run(0, blocks);
  // whole pairs of blocks per part (the VNNI path takes blocks two at a time)
  const int pairs = (blocks + 1) / 2;
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int part = 0; part < parts; ++part) {
    const int begin = 2 * (pairs * part / parts),
              end = std::min(blocks, 2 * (pairs * (part + 1) / parts));
    run(begin, end);
  }
}

// f(i) for i < n on up to `threads` threads (rows of attention, of the output softmax): each i
// computed as on one thread.
template <typename F>
inline void for_each_row(int n, int threads, F f) {
  const int parts = std::min(threads, n);
  if (parts <= 1) {
    for (int i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for num_threads(parts) schedule(static)
  for (int i = 0; i < n; ++i) f(i);
}

// for_each_row for rows of `width` cheap element operations (norms, residuals, activations): on
// one thread below 64k elements, where starting the threads costs about what they save.
template <typename F>
inline void for_each_row(int n, int width, int threads, F f) {
  const bool worth = static_cast<int64_t>(n) * width >= (1 << 16);
  for_each_row(n, worth ? threads : 1, f);
}

// Sum of exp(x[i] - shift) over a row whose maximum is shift.
inline float sum_exp(const float* x, int n, float shift) {
  switch (reductions_of(active_kernel)) {
#ifdef TMG_X86
    case Kernel::avx512_vnni: return sum_exp_avx512(x, n, shift);
    case Kernel::avx2: return sum_exp_avx2(x, n, shift);
#endif
#ifdef TMG_NEON
    case Kernel::neon: return sum_exp_neon(x, n, shift);
#endif
    default: return sum_in_lanes(n, [&](int i) { return exp_shifted(x[i], shift); });
  }
}

inline float dot(const float* a, const float* b, int n) {
  switch (reductions_of(active_kernel)) {
#ifdef TMG_X86
    case Kernel::avx512_vnni: return dot_avx512(a, b, n);
    case Kernel::avx2: return dot_avx2(a, b, n);
#endif
#ifdef TMG_NEON
    case Kernel::neon: return dot_neon(a, b, n);
#endif
    default: return sum_in_lanes(n, [&](int i) { return a[i] * b[i]; });
  }
}

inline float max_of(const float* x, int n) {
  switch (reductions_of(active_kernel)) {
#ifdef TMG_X86
    case Kernel::avx512_vnni: return max_avx512(x, n);
    case Kernel::avx2: return max_avx2(x, n);
#endif
#ifdef TMG_NEON
    case Kernel::neon: return max_neon(x, n);
#endif
    default: {
      float top = -std::numeric_limits<float>::infinity();
      for (int i = 0; i < n; ++i) top = std::max(top, x[i]);
      return top;
    }
  }
}

// Bit i set where base + row[i] > threshold, for i < 16.
inline uint32_t above16(const float* row, float base, float threshold) {
  switch (reductions_of(active_kernel)) {
#ifdef TMG_X86
    case Kernel::avx512_vnni: return above16_avx512(row, base, threshold);
    case Kernel::avx2: return above16_avx2(row, base, threshold);
#endif
#ifdef TMG_NEON
    case Kernel::neon: return above16_neon(row, base, threshold);
#endif
    default: {
      uint32_t mask = 0;
      for (int j = 0; j < 16; ++j)
        if (base + row[j] > threshold) mask |= 1u << j;
      return mask;
    }
  }
}

inline int padded(int k) { return (k + 63) / 64 * 64; }

}  // namespace tm_guide_fused
