// The fused CPU engine: a CTranslate2 Transformer (int8 linears) and the guided beam search in
// one compiled loop.
//
// Why: on a small model, a decoder step of 5 hypotheses is ~100 tiny tensor ops, and each costs
// an operator dispatch in PyTorch; the search around it costs as much again in Python. Here a
// step is 19 int8 matrix products plus plain loops, and the search (tm_guide/decoding/search.py,
// rule for rule) runs between steps without returning to Python.
//
// Int8: weights are CTranslate2's own int8 rows and scales; activations are quantized per row
// (scale 127 / max |x|), as CTranslate2 does, so a row's result never depends on the other rows
// of the batch. The products use AVX-512 VNNI where the CPU has it (u8 x s8 with the usual +128
// shift and a per-column correction, exact in int32), else portable loops; both give the same
// integers.
//
// The search can also run over log-probabilities that a Python step decoder returns
// (search_with_steps): the tests use it to check the compiled search against search.py.

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define TMG_X86 1
#endif

namespace py = pybind11;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Int8Array = py::array_t<int8_t, py::array::c_style | py::array::forcecast>;

// ---------------------------------------------------------------------------------------------
// Kernels

bool cpu_has_vnni() {
#if defined(TMG_X86) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

bool use_vnni = cpu_has_vnni();  // also gates the other AVX-512 loops

// Weights are packed for VNNI: blocks of 16 output rows; within a block, for each group of 4
// inputs, the 16 rows' 4 int8 values (64 bytes), so that one vpdpbusd with 4 broadcast
// activation bytes adds 4 products to each of 16 outputs: no horizontal sums.
// packed[(block * (kp / 4) + group) * 64 + row_in_block * 4 + j] = W[block * 16 + row, group * 4 + j]
std::vector<int8_t> pack_weights(const int8_t* w, int out, int in, int kp) {
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
void gemm_portable(const uint8_t* a, int m_rows, const int8_t* packed, int n_cols, int kp,
                   const Epilogue& e, float* y) {
  const int groups = kp / 4;
  for (int m = 0; m < m_rows; ++m) {
    const uint8_t* arow = a + static_cast<size_t>(m) * kp;
    for (int n = 0; n < n_cols; ++n) {
      const int8_t* block = packed + static_cast<size_t>(n / 16) * groups * 64 + (n % 16) * 4;
      int32_t sum = 0;
      for (int g = 0; g < groups; ++g)
        for (int j = 0; j < 4; ++j) sum += static_cast<int32_t>(arow[g * 4 + j]) * block[g * 64 + j];
      y[static_cast<size_t>(m) * n_cols + n] = dequantize(sum, m, n, e);
    }
  }
}

#ifdef TMG_X86
template <int MB, int NB>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) inline void vnni_tile(
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
      __m512 out = _mm512_mul_ps(products, _mm512_mul_ps(_mm512_set1_ps(e.row_scale[m0 + i]), scales));
      if (e.bias) out = _mm512_add_ps(out, bias);
      _mm512_mask_storeu_ps(y + static_cast<size_t>(i) * n_cols + col, mask, out);
    }
  }
}

template <int NB>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void vnni_rows(
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

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void gemm_vnni(const uint8_t* a,
                                                                        int m_rows,
                                                                        const int8_t* packed,
                                                                        int n_cols, int kp,
                                                                        const Epilogue& e,
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

// Sum of exp(x[i] - shift) over a row.
__attribute__((target("avx512f"))) float sum_exp_avx512(const float* x, int n, float shift) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f);
  const __m512 ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  const __m512 lo = _mm512_set1_ps(-87.0f);
  const __m512 vshift = _mm512_set1_ps(shift);
  __m512 total = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_max_ps(_mm512_sub_ps(_mm512_loadu_ps(x + i), vshift), lo);
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(v, log2e), _MM_FROUND_TO_NEAREST_INT);
    __m512 r = _mm512_fnmadd_ps(k, ln2_hi, v);
    r = _mm512_fnmadd_ps(k, ln2_lo, r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    total = _mm512_add_ps(total, _mm512_scalef_ps(p, k));
  }
  float sum = _mm512_reduce_add_ps(total);
  for (; i < n; ++i) sum += std::exp(x[i] - shift);
  return sum;
}
#endif

void gemm(const uint8_t* a, int m_rows, const int8_t* b, int n_cols, int kp, const Epilogue& e,
          float* y) {
#ifdef TMG_X86
  if (use_vnni) return gemm_vnni(a, m_rows, b, n_cols, kp, e, y);
#endif
  gemm_portable(a, m_rows, b, n_cols, kp, e, y);
}

float sum_exp(const float* x, int n, float shift) {
#ifdef TMG_X86
  if (use_vnni) return sum_exp_avx512(x, n, shift);
#endif
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += std::exp(x[i] - shift);
  return sum;
}

inline int padded(int k) { return (k + 63) / 64 * 64; }

// Reductions: their summation order is fixed by the code, not by the batch, so a row's result
// stays independent of its batchmates. `omp simd` (built with -fopenmp-simd) vectorizes the
// simple loops; the two that GCC leaves scalar are written out for AVX-512.
#ifdef TMG_X86
__attribute__((target("avx512f"))) inline float dot_avx512(const float* a, const float* b, int n) {
  __m512 acc = _mm512_setzero_ps();
  int i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
  float sum = _mm512_reduce_add_ps(acc);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

__attribute__((target("avx512f"))) inline float max_avx512(const float* x, int n) {
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
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

inline float max_of(const float* x, int n) {
#ifdef TMG_X86
  if (use_vnni) return max_avx512(x, n);
#endif
  float top = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) top = std::max(top, x[i]);
  return top;
}

// ---------------------------------------------------------------------------------------------
// Layers

struct Scratch {
  std::vector<uint8_t> quantized;
  std::vector<float> inverse_scales;
};

struct Linear {
  int out = 0, in = 0, kp = 0;
  std::vector<int8_t> weight;       // packed (pack_weights)
  std::vector<float> inverse_scale;  // 1 / CTranslate2's scale (float weight = int8 / scale)
  std::vector<int32_t> column_sum;  // sum_k weight[n, k], for the +128 shift
  std::vector<float> bias;          // empty: none

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
    for (int m = 0; m < rows; ++m) {
      const float* row = x + static_cast<size_t>(m) * in;
      float amax = 0.0f;
#pragma omp simd reduction(max : amax)
      for (int k = 0; k < in; ++k) amax = std::max(amax, std::fabs(row[k]));
      const float scale = amax > 0.0f ? 127.0f / amax : 1.0f;
      uint8_t* q = s.quantized.data() + static_cast<size_t>(m) * kp;
#pragma omp simd
      for (int k = 0; k < in; ++k) {
        const int v = static_cast<int>(std::lrint(row[k] * scale));  // to nearest, ties even
        q[k] = static_cast<uint8_t>(std::max(-127, std::min(127, v)) + 128);
      }
      std::memset(q + in, 128, kp - in);
      s.inverse_scales[m] = 1.0f / scale;
    }
    const Epilogue e{column_sum.data(), inverse_scale.data(), bias.empty() ? nullptr : bias.data(),
                     s.inverse_scales.data()};
    gemm(s.quantized.data(), rows, weight.data(), out, kp, e, y);
  }
};

struct Norm {
  std::vector<float> gamma, beta;
  float eps = 1e-5f;
  bool present() const { return !gamma.empty(); }
  void apply(float* x, int rows, int depth) const {
    for (int m = 0; m < rows; ++m) {
      float* row = x + static_cast<size_t>(m) * depth;
      float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
      for (int k = 0; k < depth; ++k) sum += row[k];
      const float mu = sum / depth;
      float squares = 0.0f;
#pragma omp simd reduction(+ : squares)
      for (int k = 0; k < depth; ++k) squares += (row[k] - mu) * (row[k] - mu);
      const float inv = 1.0f / std::sqrt(squares / depth + eps);
#pragma omp simd
      for (int k = 0; k < depth; ++k) row[k] = (row[k] - mu) * inv * gamma[k] + beta[k];
    }
  }
};

template <typename F>
void each(float* x, size_t n, F f) {
#pragma omp simd
  for (size_t i = 0; i < n; ++i) x[i] = f(x[i]);
}

void activate(float* x, size_t n, int code) {
  switch (code) {
    case 0: return each(x, n, [](float v) { return v > 0.0f ? v : 0.0f; });
    case 1:
      return each(x, n, [](float v) {
        return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
      });
    case 2: return each(x, n, [](float v) { return v / (1.0f + std::exp(-v)); });
    case 3: return each(x, n, [](float v) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678f)); });
    case 4: return each(x, n, [](float v) { return v / (1.0f + std::exp(-1.702f * v)); });
    case 5: return each(x, n, [](float v) { return std::tanh(v); });
    default: return each(x, n, [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
  }
}

// softmax(q . keys) . values over `length` positions of one head; key/value of position j at
// key(j) / value(j).
template <typename KeyAt, typename ValueAt>
void attend(const float* q, int length, int head_dim, KeyAt key, ValueAt value, float* out,
            std::vector<float>& weights) {
  weights.resize(length);
  float top = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < length; ++j) {
    weights[j] = dot(q, key(j), head_dim);
    top = std::max(top, weights[j]);
  }
  float total = 0.0f;
  for (int j = 0; j < length; ++j) {
    weights[j] = std::exp(weights[j] - top);
    total += weights[j];
  }
  std::fill(out, out + head_dim, 0.0f);
  for (int j = 0; j < length; ++j) {
    const float w = weights[j] / total;
    const float* v = value(j);
#pragma omp simd
    for (int d = 0; d < head_dim; ++d) out[d] += w * v[d];
  }
}

// ---------------------------------------------------------------------------------------------
// The model

struct DecoderLayer {
  Linear self_qkv, self_out, cross_q, cross_out, ffn_inner, ffn_outer, cross_kv;
  Norm self_norm, cross_norm, ffn_norm;
};

struct EncoderLayer {
  Linear qkv, out, ffn_inner, ffn_outer;
  Norm self_norm, ffn_norm;
};

struct Stack {
  std::vector<float> embeddings;  // [vocab, depth]
  std::vector<float> positions;   // [max positions, depth]
  int max_positions = 0;
  float embedding_scale = 1.0f;
  Norm embedding_norm, final_norm;
};

// One sentence's cross-attention keys and values per decoder layer, [time, depth] each.
struct Encoded {
  int length = 0;
  std::vector<std::vector<float>> keys, values;
};

struct StepProvider {
  virtual ~StepProvider() = default;
  // Log-probabilities [rows, vocab]; parents == nullptr on the first step.
  virtual float* step(const int* parents, const std::vector<int>& row_sentences,
                      const std::vector<int>& last_ids, bool mask_end) = 0;
};

class Model {
 public:
  int depth = 0, heads = 0, head_dim = 0, vocab = 0, activation = 0;
  bool pre_norm = false, start_from_zero = false;
  Stack encoder, decoder;
  std::vector<EncoderLayer> encoder_layers;
  std::vector<DecoderLayer> decoder_layers;
  Linear projection;

  Model(py::dict config, py::dict weights) {
    depth = config["depth"].cast<int>();
    heads = config["heads"].cast<int>();
    head_dim = depth / heads;
    activation = config["activation"].cast<int>();
    pre_norm = config["pre_norm"].cast<bool>();
    start_from_zero = config["start_from_zero"].cast<bool>();
    const float eps = config["eps"].cast<float>();
    const int n_encoder = config["encoder_layers"].cast<int>();
    const int n_decoder = config["decoder_layers"].cast<int>();
    auto floats = [&](const std::string& key) {
      FloatArray a = weights[py::str(key)].cast<FloatArray>();
      return std::vector<float>(a.data(), a.data() + a.size());
    };
    auto has = [&](const std::string& key) { return weights.contains(py::str(key)); };
    auto linear = [&](const std::string& key) {
      py::object bias = py::none();
      if (has(key + "/bias")) bias = weights[py::str(key + "/bias")];
      return Linear(weights[py::str(key + "/weight")].cast<Int8Array>(),
                    weights[py::str(key + "/weight_scale")].cast<FloatArray>(), bias);
    };
    auto norm = [&](const std::string& key) {
      Norm n;
      n.eps = eps;
      if (has(key + "/gamma")) {
        n.gamma = floats(key + "/gamma");
        n.beta = floats(key + "/beta");
      }
      return n;
    };
    auto stack = [&](const std::string& scope) {
      Stack s;
      s.embeddings = floats(scope + "/embeddings");
      s.positions = floats(scope + "/positions");
      s.max_positions = static_cast<int>(s.positions.size() / depth);
      s.embedding_scale = config[py::str(scope + "_embedding_scale")].cast<float>();
      s.embedding_norm = norm(scope + "/layernorm_embedding");
      s.final_norm = norm(scope + "/layer_norm");
      return s;
    };
    encoder = stack("encoder");
    decoder = stack("decoder");
    vocab = static_cast<int>(decoder.embeddings.size() / depth);
    for (int i = 0; i < n_encoder; ++i) {
      const std::string p = "encoder/layer_" + std::to_string(i);
      EncoderLayer l;
      l.qkv = linear(p + "/self_attention/linear_0");
      l.out = linear(p + "/self_attention/linear_1");
      l.self_norm = norm(p + "/self_attention/layer_norm");
      l.ffn_inner = linear(p + "/ffn/linear_0");
      l.ffn_outer = linear(p + "/ffn/linear_1");
      l.ffn_norm = norm(p + "/ffn/layer_norm");
      encoder_layers.push_back(std::move(l));
    }
    for (int i = 0; i < n_decoder; ++i) {
      const std::string p = "decoder/layer_" + std::to_string(i);
      DecoderLayer l;
      l.self_qkv = linear(p + "/self_attention/linear_0");
      l.self_out = linear(p + "/self_attention/linear_1");
      l.self_norm = norm(p + "/self_attention/layer_norm");
      l.cross_q = linear(p + "/attention/linear_0");
      l.cross_kv = linear(p + "/attention/linear_1");
      l.cross_out = linear(p + "/attention/linear_2");
      l.cross_norm = norm(p + "/attention/layer_norm");
      l.ffn_inner = linear(p + "/ffn/linear_0");
      l.ffn_outer = linear(p + "/ffn/linear_1");
      l.ffn_norm = norm(p + "/ffn/layer_norm");
      decoder_layers.push_back(std::move(l));
    }
    projection = linear("decoder/projection");
    if (projection.out != vocab) throw std::invalid_argument("projection size != vocabulary");
  }

  // x = x + h (pre-norm) or norm(x + h) (post-norm)
  void residual(float* x, const float* h, int rows, const Norm& n) const {
    const size_t count = static_cast<size_t>(rows) * depth;
    for (size_t i = 0; i < count; ++i) x[i] += h[i];
    if (!pre_norm) n.apply(x, rows, depth);
  }

  // The sublayer input: norm(x) before the sublayer (pre-norm), else x itself.
  const float* sublayer_input(const float* x, int rows, const Norm& n,
                              std::vector<float>& buffer) const {
    if (!pre_norm) return x;
    buffer.assign(x, x + static_cast<size_t>(rows) * depth);
    n.apply(buffer.data(), rows, depth);
    return buffer.data();
  }

  std::vector<Encoded> encode(const std::vector<std::vector<int>>& sources) const {
    std::vector<Encoded> result(sources.size());
    Scratch s;
    std::vector<float> x, h, qkv, att, inner, normed, weights_buf, kv;
    for (size_t b = 0; b < sources.size(); ++b) {
      const auto& ids = sources[b];
      const int time = static_cast<int>(ids.size());
      if (time > encoder.max_positions)
        throw std::length_error("source of " + std::to_string(time) +
                                " positions exceeds the model's " +
                                std::to_string(encoder.max_positions) + " position encodings");
      x.assign(static_cast<size_t>(time) * depth, 0.0f);
      for (int t = 0; t < time; ++t) {
        const float* e = encoder.embeddings.data() + static_cast<size_t>(ids[t]) * depth;
        const float* p = encoder.positions.data() + static_cast<size_t>(t) * depth;
        for (int d = 0; d < depth; ++d)
          x[static_cast<size_t>(t) * depth + d] = e[d] * encoder.embedding_scale + p[d];
      }
      if (encoder.embedding_norm.present()) encoder.embedding_norm.apply(x.data(), time, depth);
      const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      for (const auto& layer : encoder_layers) {
        qkv.resize(static_cast<size_t>(time) * 3 * depth);
        layer.qkv.apply(sublayer_input(x.data(), time, layer.self_norm, normed), time, qkv.data(), s);
        att.assign(static_cast<size_t>(time) * depth, 0.0f);
        std::vector<float> q(head_dim);
        for (int t = 0; t < time; ++t) {
          for (int hh = 0; hh < heads; ++hh) {
            const float* qsrc = qkv.data() + static_cast<size_t>(t) * 3 * depth + hh * head_dim;
            for (int d = 0; d < head_dim; ++d) q[d] = qsrc[d] * scale;
            attend(
                q.data(), time, head_dim,
                [&](int j) { return qkv.data() + static_cast<size_t>(j) * 3 * depth + depth + hh * head_dim; },
                [&](int j) { return qkv.data() + static_cast<size_t>(j) * 3 * depth + 2 * depth + hh * head_dim; },
                att.data() + static_cast<size_t>(t) * depth + hh * head_dim, weights_buf);
          }
        }
        h.resize(static_cast<size_t>(time) * depth);
        layer.out.apply(att.data(), time, h.data(), s);
        residual(x.data(), h.data(), time, layer.self_norm);
        inner.resize(static_cast<size_t>(time) * layer.ffn_inner.out);
        layer.ffn_inner.apply(sublayer_input(x.data(), time, layer.ffn_norm, normed), time, inner.data(), s);
        activate(inner.data(), inner.size(), activation);
        layer.ffn_outer.apply(inner.data(), time, h.data(), s);
        residual(x.data(), h.data(), time, layer.ffn_norm);
      }
      if (encoder.final_norm.present()) encoder.final_norm.apply(x.data(), time, depth);
      Encoded& e = result[b];
      e.length = time;
      for (const auto& layer : decoder_layers) {
        kv.resize(static_cast<size_t>(time) * 2 * depth);
        layer.cross_kv.apply(x.data(), time, kv.data(), s);
        std::vector<float> keys(static_cast<size_t>(time) * depth), values(keys.size());
        for (int t = 0; t < time; ++t) {
          std::memcpy(keys.data() + static_cast<size_t>(t) * depth, kv.data() + static_cast<size_t>(t) * 2 * depth, depth * sizeof(float));
          std::memcpy(values.data() + static_cast<size_t>(t) * depth, kv.data() + static_cast<size_t>(t) * 2 * depth + depth, depth * sizeof(float));
        }
        e.keys.push_back(std::move(keys));
        e.values.push_back(std::move(values));
      }
    }
    return result;
  }
};

// The decoder's state over a search: the encoded sentences and the self-attention keys and
// values of every step. Step t's keys/values are stored once, in that step's row order; a row's
// ancestor at each earlier step is kept instead of reordering the cache.
class Decoding : public StepProvider {
 public:
  Decoding(const Model& model, std::vector<Encoded> encoded)
      : m_(model), encoded_(std::move(encoded)), keys_(model.decoder_layers.size()),
        values_(model.decoder_layers.size()) {}

  float* step(const int* parents, const std::vector<int>& row_sentences,
              const std::vector<int>& last_ids, bool mask_end) override {
    const int rows = static_cast<int>(row_sentences.size());
    const int depth = m_.depth, hd = m_.head_dim;
    const int t = step_;
    if (t >= m_.decoder.max_positions)
      throw std::length_error("output of " + std::to_string(t + 1) +
                              " positions exceeds the model's " +
                              std::to_string(m_.decoder.max_positions) + " position encodings");
    // ancestors: ancestors_[tau][r] is the row of step tau that row r descends from
    for (auto& level : ancestors_) {
      std::vector<int> moved(rows);
      for (int r = 0; r < rows; ++r) moved[r] = level[parents[r]];
      level.swap(moved);
    }
    std::vector<int> own(rows);
    for (int r = 0; r < rows; ++r) own[r] = r;
    ancestors_.push_back(std::move(own));

    x_.resize(static_cast<size_t>(rows) * depth);
    const float* pos = m_.decoder.positions.data() + static_cast<size_t>(t) * depth;
    for (int r = 0; r < rows; ++r) {
      float* row = x_.data() + static_cast<size_t>(r) * depth;
      if (t == 0 && m_.start_from_zero) {
        std::memcpy(row, pos, depth * sizeof(float));
      } else {
        const float* e = m_.decoder.embeddings.data() + static_cast<size_t>(last_ids[r]) * depth;
        for (int d = 0; d < depth; ++d) row[d] = e[d] * m_.decoder.embedding_scale + pos[d];
      }
    }
    if (m_.decoder.embedding_norm.present()) m_.decoder.embedding_norm.apply(x_.data(), rows, depth);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::vector<float> q(hd);
    for (size_t li = 0; li < m_.decoder_layers.size(); ++li) {
      const DecoderLayer& layer = m_.decoder_layers[li];
      qkv_.resize(static_cast<size_t>(rows) * 3 * depth);
      layer.self_qkv.apply(m_.sublayer_input(x_.data(), rows, layer.self_norm, normed_), rows, qkv_.data(), s_);
      std::vector<float> k(static_cast<size_t>(rows) * depth), v(k.size());
      for (int r = 0; r < rows; ++r) {
        std::memcpy(k.data() + static_cast<size_t>(r) * depth, qkv_.data() + static_cast<size_t>(r) * 3 * depth + depth, depth * sizeof(float));
        std::memcpy(v.data() + static_cast<size_t>(r) * depth, qkv_.data() + static_cast<size_t>(r) * 3 * depth + 2 * depth, depth * sizeof(float));
      }
      keys_[li].push_back(std::move(k));
      values_[li].push_back(std::move(v));
      const auto& layer_keys = keys_[li];
      const auto& layer_values = values_[li];
      att_.assign(static_cast<size_t>(rows) * depth, 0.0f);
      for (int r = 0; r < rows; ++r) {
        for (int h = 0; h < m_.heads; ++h) {
          const float* qsrc = qkv_.data() + static_cast<size_t>(r) * 3 * depth + h * hd;
          for (int d = 0; d < hd; ++d) q[d] = qsrc[d] * scale;
          const int offset = h * hd;
          attend(
              q.data(), t + 1, hd,
              [&](int j) { return layer_keys[j].data() + static_cast<size_t>(ancestors_[j][r]) * depth + offset; },
              [&](int j) { return layer_values[j].data() + static_cast<size_t>(ancestors_[j][r]) * depth + offset; },
              att_.data() + static_cast<size_t>(r) * depth + offset, weights_);
        }
      }
      h_.resize(static_cast<size_t>(rows) * depth);
      layer.self_out.apply(att_.data(), rows, h_.data(), s_);
      m_.residual(x_.data(), h_.data(), rows, layer.self_norm);
      // cross-attention
      cq_.resize(static_cast<size_t>(rows) * depth);
      layer.cross_q.apply(m_.sublayer_input(x_.data(), rows, layer.cross_norm, normed_), rows, cq_.data(), s_);
      for (int r = 0; r < rows; ++r) {
        const Encoded& e = encoded_[row_sentences[r]];
        const float* ek = e.keys[li].data();
        const float* ev = e.values[li].data();
        for (int h = 0; h < m_.heads; ++h) {
          const int offset = h * hd;
          const float* qsrc = cq_.data() + static_cast<size_t>(r) * depth + offset;
          for (int d = 0; d < hd; ++d) q[d] = qsrc[d] * scale;
          attend(
              q.data(), e.length, hd,
              [&](int j) { return ek + static_cast<size_t>(j) * depth + offset; },
              [&](int j) { return ev + static_cast<size_t>(j) * depth + offset; },
              att_.data() + static_cast<size_t>(r) * depth + offset, weights_);
        }
      }
      layer.cross_out.apply(att_.data(), rows, h_.data(), s_);
      m_.residual(x_.data(), h_.data(), rows, layer.cross_norm);
      // feed-forward
      inner_.resize(static_cast<size_t>(rows) * layer.ffn_inner.out);
      layer.ffn_inner.apply(m_.sublayer_input(x_.data(), rows, layer.ffn_norm, normed_), rows, inner_.data(), s_);
      activate(inner_.data(), inner_.size(), m_.activation);
      layer.ffn_outer.apply(inner_.data(), rows, h_.data(), s_);
      m_.residual(x_.data(), h_.data(), rows, layer.ffn_norm);
    }
    if (m_.decoder.final_norm.present()) m_.decoder.final_norm.apply(x_.data(), rows, depth);
    const int vocab = m_.vocab;
    logits_.resize(static_cast<size_t>(rows) * vocab);
    m_.projection.apply(x_.data(), rows, logits_.data(), s_);
    for (int r = 0; r < rows; ++r) {
      float* row = logits_.data() + static_cast<size_t>(r) * vocab;
      if (mask_end) row[end_id] = -std::numeric_limits<float>::infinity();
      const float top = max_of(row, vocab);
      const float shift = top + std::log(sum_exp(row, vocab, top));
#pragma omp simd
      for (int i = 0; i < vocab; ++i) row[i] -= shift;
    }
    ++step_;
    return logits_.data();
  }

  int end_id = 0;

 private:
  const Model& m_;
  std::vector<Encoded> encoded_;
  std::vector<std::vector<std::vector<float>>> keys_, values_;  // [layer][step] -> [rows, depth]
  std::vector<std::vector<int>> ancestors_;
  int step_ = 0;
  Scratch s_;
  std::vector<float> x_, qkv_, att_, h_, cq_, inner_, logits_, normed_, weights_;
};

// ---------------------------------------------------------------------------------------------
// Translation pieces (tm_guide.decoding.rewards.PieceReward, as tables)

struct Gram {
  std::array<int32_t, 4> ids{-1, -1, -1, -1};
  bool operator==(const Gram& o) const { return ids == o.ids; }
};
struct GramHash {
  size_t operator()(const Gram& g) const {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t v : g.ids) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

Gram make_gram(const int* ids, int n) {
  Gram g;
  for (int i = 0; i < n; ++i) g.ids[i] = ids[i];
  return g;
}

class RewardTable {
 public:
  struct Entry {
    int slot;      // index into rewarded ids
    double score;  // D_X of context + token
    int piece;     // id of the n-gram (n >= 2), -1 for a single token
  };

  RewardTable(const std::vector<std::pair<std::vector<int>, double>>& ngrams, int max_n)
      : max_n_(max_n) {
    if (max_n < 1 || max_n > 4) throw std::invalid_argument("max_n must be 1..4");
    for (const auto& item : ngrams) rewarded_.push_back(item.first.back());
    std::sort(rewarded_.begin(), rewarded_.end());
    rewarded_.erase(std::unique(rewarded_.begin(), rewarded_.end()), rewarded_.end());
    for (const auto& [gram, score] : ngrams) {
      const int n = static_cast<int>(gram.size());
      if (n < 1 || n > max_n) throw std::invalid_argument("n-gram longer than max_n");
      const int slot = static_cast<int>(
          std::lower_bound(rewarded_.begin(), rewarded_.end(), gram.back()) - rewarded_.begin());
      int piece = -1;
      if (n >= 2) {
        piece = static_cast<int>(pieces_.size());
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

 private:
  int max_n_;
  std::vector<int> rewarded_;
  std::unordered_map<Gram, std::vector<Entry>, GramHash> by_context_;
  std::unordered_map<Gram, int, GramHash> pieces_;
};

// ---------------------------------------------------------------------------------------------
// The search (tm_guide/decoding/search.py's beam_search, rule for rule)

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

#ifdef TMG_X86
// Whether any of 16 totals beats the threshold, as a bit mask.
__attribute__((target("avx512f"))) inline uint32_t above16(const float* row, float base,
                                                         float threshold) {
  const __m512 totals = _mm512_add_ps(_mm512_set1_ps(base), _mm512_loadu_ps(row));
  return _mm512_cmp_ps_mask(totals, _mm512_set1_ps(threshold), _CMP_GT_OQ);
}
#endif

// The k best (row, token) of a group of rows by cum[row] + values[row, token]; ties: lower flat
// index first (search.top_candidates). Once k are held, only totals above the k-th are looked
// at, 16 at a time.
void top_k(const float* values, const float* cum, int rows, int vocab, int k,
           std::vector<Candidate>& best) {
  best.clear();
  for (int r = 0; r < rows; ++r) {
    const float* row = values + static_cast<size_t>(r) * vocab;
    const float base = cum[r];
    const int64_t first = static_cast<int64_t>(r) * vocab;
    int u = 0;
    for (; u < vocab && static_cast<int>(best.size()) < k; ++u) offer(best, k, base + row[u], first + u);
#ifdef TMG_X86
    if (use_vnni) {
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
#endif
    for (; u < vocab; ++u) {
      const float total = base + row[u];
      if (total > best.back().score) offer(best, k, total, first + u);
    }
  }
}

std::vector<std::vector<Closed>> run_search(StepProvider& provider, int batch,
                                            const std::vector<int>& caps,
                                            const SearchConfig& cfg,
                                            const std::vector<const RewardTable*>& rewards) {
  const int vocab = cfg.vocab, beam = cfg.beam, num_candidates = 2 * beam;
  const bool use_reward = cfg.lam != 0.0 &&
                          std::any_of(rewards.begin(), rewards.end(), [](auto* t) { return t; });
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
  std::vector<std::vector<int>> used(batch);  // sorted piece ids
  std::vector<std::vector<Closed>> closed(batch);
  std::vector<char> top_closed(batch, 0), done_sentence(batch, 0);

  // per row: (token, lambda * reward as float32) of this step
  std::vector<std::vector<std::pair<int, float>>> step_rewards;
  std::vector<std::pair<int, float>> saved;  // (flat index, original log-prob)
  std::vector<double> sums;
  std::vector<Candidate> best;

  for (int step = 0; step < longest; ++step) {
    const int rows = static_cast<int>(live.size()) * rows_per;
    std::vector<int> row_sentences(rows);
    for (int r = 0; r < rows; ++r) row_sentences[r] = live[r / rows_per];
    float* log_probs = provider.step(step == 0 ? nullptr : parents.data(), row_sentences, last_ids,
                                     step < cfg.min_length);
    step_rewards.assign(use_reward ? rows : 0, {});
    saved.clear();
    if (use_reward) {
      for (int r = 0; r < rows; ++r) {
        const RewardTable* table = rewards[row_sentences[r]];
        if (!table) continue;
        const auto& history = sequences[r];
        const int width = table->max_n() - 1;
        const int tail = std::min<int>(width, static_cast<int>(history.size()));
        const int* end = history.data() + history.size();
        sums.assign(table->rewarded().size(), 0.0);
        std::vector<char> touched(sums.size(), 0);
        for (int n = 0; n <= tail; ++n) {
          const auto* entries = table->after(end - n, n);
          if (!entries) continue;
          for (const auto& e : *entries) {
            if (n && track_used && std::binary_search(used[r].begin(), used[r].end(), e.piece))
              continue;
            sums[e.slot] += e.score;
            touched[e.slot] = 1;
          }
        }
        auto& out = step_rewards[r];
        for (size_t slot = 0; slot < sums.size(); ++slot) {
          if (!touched[slot] || sums[slot] == 0.0) continue;
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

    std::vector<std::vector<Candidate>> tops(live.size());
    for (size_t g = 0; g < live.size(); ++g) {
      const size_t first = g * rows_per;
      top_k(log_probs + first * vocab, cum_score.data() + first, rows_per, vocab, num_candidates,
            tops[g]);
    }
    for (const auto& [flat, value] : saved) log_probs[flat] = value;  // the model's own again

    std::vector<int> next_rows, next_ids, still_live;
    std::vector<float> next_score;
    for (size_t g = 0; g < live.size(); ++g) {
      const int sentence = live[g];
      const bool is_last_step = step + 1 == caps[sentence];
      const auto& cands = tops[g];
      const int count = static_cast<int>(cands.size());
      auto token_of = [&](int j) { return static_cast<int>(cands[j].flat % vocab); };
      auto origin_of = [&](int j) {
        return static_cast<int>(g * rows_per + cands[j].flat / vocab);
      };
      int secondary = beam;
      std::vector<int> chosen;
      for (int k = 0; k < beam && k < count; ++k) {
        int pick = k;
        const int token = token_of(k);
        if (token == cfg.end_id || is_last_step) {
          if (k == 0) top_closed[sentence] = 1;
          const int origin = origin_of(k);
          Closed c;
          c.raw_score = cands[k].score;
          c.tokens = sequences[origin];
          if (token != cfg.end_id) c.tokens.push_back(token);
          c.log_prob = static_cast<double>(
              cum_logp[origin] + log_probs[static_cast<size_t>(origin) * vocab + token]);
          c.reward = cum_reward[origin] + reward_of(origin, token);
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
        done = top_closed[sentence] &&
               static_cast<int>(closed[sentence].size()) >= cfg.num_hypotheses;
      } else {
        done = static_cast<int>(closed[sentence].size()) >= cfg.max_closed;
      }
      if (done) continue;
      still_live.push_back(sentence);
      for (int pick : chosen) {
        next_rows.push_back(origin_of(pick));
        next_ids.push_back(token_of(pick));
        next_score.push_back(cands[pick].score);
      }
    }
    if (still_live.empty()) break;
    const size_t n_next = next_rows.size();
    std::vector<float> new_logp(n_next);
    std::vector<double> new_reward(n_next);
    std::vector<std::vector<int>> new_sequences(n_next), new_used(track_used ? n_next : 0);
    for (size_t i = 0; i < n_next; ++i) {
      const int p = next_rows[i], t = next_ids[i];
      new_logp[i] = cum_logp[p] + log_probs[static_cast<size_t>(p) * vocab + t];
      new_reward[i] = cum_reward[p] + reward_of(p, t);
      new_sequences[i] = sequences[p];
      new_sequences[i].push_back(t);
      if (track_used) {
        new_used[i] = used[p];
        const RewardTable* table = rewards[still_live[i / beam]];
        if (table) {
          const auto& h = new_sequences[i];
          const int upto = std::min<int>(table->max_n(), static_cast<int>(h.size()));
          for (int n = 2; n <= upto; ++n) {
            const int piece = table->piece(h.data() + h.size() - n, n);
            if (piece < 0) continue;
            auto at = std::lower_bound(new_used[i].begin(), new_used[i].end(), piece);
            if (at == new_used[i].end() || *at != piece) new_used[i].insert(at, piece);
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
    live = std::move(still_live);
    rows_per = beam;
  }
  return closed;
}

// A step provider that asks Python (tests: the compiled search over another engine's steps).
class PythonSteps : public StepProvider {
 public:
  PythonSteps(py::function fn, int vocab) : fn_(std::move(fn)), vocab_(vocab) {}
  float* step(const int* parents, const std::vector<int>& row_sentences,
              const std::vector<int>& last_ids, bool mask_end) override {
    py::gil_scoped_acquire gil;
    const size_t rows = row_sentences.size();
    py::object p = py::none();
    if (parents) p = py::array_t<int64_t>(rows, std::vector<int64_t>(parents, parents + rows).data());
    py::array_t<int64_t> s(rows, std::vector<int64_t>(row_sentences.begin(), row_sentences.end()).data());
    py::array_t<int64_t> l(rows, std::vector<int64_t>(last_ids.begin(), last_ids.end()).data());
    FloatArray out = fn_(p, s, l, mask_end).cast<FloatArray>();
    if (out.ndim() != 2 || static_cast<size_t>(out.shape(0)) != rows || out.shape(1) != vocab_)
      throw std::invalid_argument("step function returned the wrong shape");
    buffer_.assign(out.data(), out.data() + out.size());
    return buffer_.data();
  }

 private:
  py::function fn_;
  int vocab_;
  std::vector<float> buffer_;
};

py::list to_python(const std::vector<std::vector<Closed>>& closed) {
  py::list result;
  for (const auto& sentence : closed) {
    py::list items;
    for (const auto& c : sentence)
      items.append(py::make_tuple(c.raw_score, py::tuple(py::cast(c.tokens)), c.log_prob,
                                  c.reward, c.length));
    result.append(items);
  }
  return result;
}

std::vector<const RewardTable*> table_pointers(const std::vector<std::shared_ptr<RewardTable>>& t) {
  std::vector<const RewardTable*> out;
  for (const auto& p : t) out.push_back(p.get());
  return out;
}

}  // namespace

PYBIND11_MODULE(_fused, m) {
  m.doc() = "Fused int8 Transformer decoding and guided beam search (tm_guide.decoding.fused)";
  m.def("kernel", []() { return std::string(use_vnni ? "avx512-vnni" : "portable"); });
  m.def("set_portable", [](bool portable) { use_vnni = !portable && cpu_has_vnni(); },
        "Use the portable kernels even where VNNI is available (tests).");

  py::class_<SearchConfig>(m, "SearchConfig")
      .def(py::init<>())
      .def_readwrite("beam", &SearchConfig::beam)
      .def_readwrite("max_closed", &SearchConfig::max_closed)
      .def_readwrite("early_exit", &SearchConfig::early_exit)
      .def_readwrite("num_hypotheses", &SearchConfig::num_hypotheses)
      .def_readwrite("min_length", &SearchConfig::min_length)
      .def_readwrite("lam", &SearchConfig::lam)
      .def_readwrite("reward_repeats", &SearchConfig::reward_repeats)
      .def_readwrite("vocab", &SearchConfig::vocab)
      .def_readwrite("start_id", &SearchConfig::start_id)
      .def_readwrite("end_id", &SearchConfig::end_id);

  py::class_<RewardTable, std::shared_ptr<RewardTable>>(m, "RewardTable")
      .def(py::init<const std::vector<std::pair<std::vector<int>, double>>&, int>());

  py::class_<Model>(m, "Model")
      .def(py::init<py::dict, py::dict>())
      .def_readonly("vocab", &Model::vocab)
      .def(
          "search",
          [](const Model& model, const std::vector<std::vector<int>>& sources,
             const std::vector<int>& caps, const SearchConfig& cfg,
             const std::vector<std::shared_ptr<RewardTable>>& rewards) {
            std::vector<std::vector<Closed>> closed;
            {
              py::gil_scoped_release release;
              Decoding decoding(model, model.encode(sources));
              decoding.end_id = cfg.end_id;
              closed = run_search(decoding, static_cast<int>(sources.size()), caps, cfg,
                                  table_pointers(rewards));
            }
            return to_python(closed);
          },
          "Guided beam search over source id lists; per sentence its closed hypotheses.")
      .def(
          "score",
          [](const Model& model, const std::vector<int>& source, const std::vector<int>& target,
             int start_id, int end_id) {
            // log-probabilities of target (then </s>), teacher-forced one token at a time
            std::vector<float> scores;
            {
              py::gil_scoped_release release;
              Decoding decoding(model, model.encode({source}));
              decoding.end_id = end_id;
              std::vector<int> rows{0}, ids{start_id}, parent{0};
              std::vector<int> all(target);
              all.push_back(end_id);
              for (size_t i = 0; i < all.size(); ++i) {
                float* lp = decoding.step(i == 0 ? nullptr : parent.data(), rows, ids, false);
                scores.push_back(lp[all[i]]);
                ids[0] = all[i];
              }
            }
            return scores;
          },
          "Teacher-forced log-probabilities of target then </s> (tests against score_batch).");

  m.def(
      "search_with_steps",
      [](py::function step, int batch, const std::vector<int>& caps, const SearchConfig& cfg,
         const std::vector<std::shared_ptr<RewardTable>>& rewards) {
        PythonSteps provider(std::move(step), cfg.vocab);
        std::vector<std::vector<Closed>> closed;
        {
          py::gil_scoped_release release;
          closed = run_search(provider, batch, caps, cfg, table_pointers(rewards));
        }
        return to_python(closed);
      },
      "The compiled search over a Python step function (parents, sentences, last_ids, "
      "mask_end) -> log-probabilities [rows, vocab].");
}
