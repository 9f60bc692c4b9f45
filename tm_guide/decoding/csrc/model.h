// The Transformer: weights from model.bin, the encoder pass and the incremental decoder step.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

#include "layers.h"

namespace tm_guide_fused {

struct DecoderLayer {
  Linear self_qkv, self_out, cross_q, cross_out, ffn_inner, ffn_outer, cross_kv;
  Norm self_norm, cross_norm, ffn_norm;
};

struct EncoderLayer {
  Linear qkv, out, ffn_inner, ffn_outer;
  Norm self_norm, ffn_norm;
};

struct Stack {
  Floats embeddings;  // [vocab, depth]
  Floats positions;   // [max positions, depth]
  int max_positions = 0;
  float embedding_scale = 1.0f;
  Norm embedding_norm, final_norm;

  // out = embedding of `id` * scale + the encoding of `position`
  void embed(int id, int position, int depth, float* out) const {
    const float* e = embeddings.data() + static_cast<size_t>(id) * depth;
    const float* p = positions.data() + static_cast<size_t>(position) * depth;
    for (int d = 0; d < depth; ++d) out[d] = e[d] * embedding_scale + p[d];
  }
};

// One sentence's cross-attention keys and values per decoder layer, [time, depth] each.
struct Encoded {
  int length = 0;
  std::vector<Floats> keys, values;
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
      return Floats(a.data(), a.data() + a.size());
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
  void residual(float* x, const float* h, int rows, const Norm& n, int threads) const {
    for_each_row(rows, depth, threads, [&](int r) {
      float* row = x + static_cast<size_t>(r) * depth;
      const float* add = h + static_cast<size_t>(r) * depth;
      for (int i = 0; i < depth; ++i) row[i] += add[i];
      if (!pre_norm) n.apply_row(row, depth);
    });
  }

  // The sublayer input: norm(x) before the sublayer (pre-norm), else x itself.
  const float* sublayer_input(const float* x, int rows, const Norm& n, Floats& buffer,
                              int threads) const {
    if (!pre_norm) return x;
    buffer.resize(static_cast<size_t>(rows) * depth);
    for_each_row(rows, depth, threads, [&](int r) {
      float* row = buffer.data() + static_cast<size_t>(r) * depth;
      std::memcpy(row, x + static_cast<size_t>(r) * depth, depth * sizeof(float));
      n.apply_row(row, depth);
    });
    return buffer.data();
  }

  std::vector<Encoded> encode(const std::vector<std::vector<int>>& sources, int threads = 1) const {
    std::vector<Encoded> result(sources.size());
    Scratch s;
    s.threads = threads;
    Floats x, h, qkv, att, inner, normed, kv;
    for (size_t b = 0; b < sources.size(); ++b) {
      const auto& ids = sources[b];
      const int time = static_cast<int>(ids.size());
      if (time > encoder.max_positions)
        throw std::length_error("source of " + std::to_string(time) +
                                " positions exceeds the model's " +
                                std::to_string(encoder.max_positions) + " position encodings");
      x.resize(static_cast<size_t>(time) * depth);
      for (int t = 0; t < time; ++t)
        encoder.embed(ids[t], t, depth, x.data() + static_cast<size_t>(t) * depth);
      if (encoder.embedding_norm.present())
        encoder.embedding_norm.apply(x.data(), time, depth, threads);
      const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
      for (const auto& layer : encoder_layers) {
        qkv.resize(static_cast<size_t>(time) * 3 * depth);
        const float* in = sublayer_input(x.data(), time, layer.self_norm, normed, threads);
        layer.qkv.apply(in, time, qkv.data(), s);
        att.assign(static_cast<size_t>(time) * depth, 0.0f);
        for_each_row(time, threads, [&](int t) {
          thread_local Floats q, weights_buf;
          for (int hh = 0; hh < heads; ++hh) {
            attend(
                qkv.data() + static_cast<size_t>(t) * 3 * depth + hh * head_dim, scale, time,
                head_dim,
                [&](int j) {
                  return qkv.data() + static_cast<size_t>(j) * 3 * depth + depth + hh * head_dim;
                },
                [&](int j) {
                  return qkv.data() + static_cast<size_t>(j) * 3 * depth + 2 * depth +
                         hh * head_dim;
                },
                att.data() + static_cast<size_t>(t) * depth + hh * head_dim, q, weights_buf);
          }
        });
        h.resize(static_cast<size_t>(time) * depth);
        layer.out.apply(att.data(), time, h.data(), s);
        residual(x.data(), h.data(), time, layer.self_norm, threads);
        inner.resize(static_cast<size_t>(time) * layer.ffn_inner.out);
        layer.ffn_inner.apply(sublayer_input(x.data(), time, layer.ffn_norm, normed, threads), time,
                              inner.data(), s);
        activate(inner.data(), time, layer.ffn_inner.out, activation, threads);
        layer.ffn_outer.apply(inner.data(), time, h.data(), s);
        residual(x.data(), h.data(), time, layer.ffn_norm, threads);
      }
      if (encoder.final_norm.present()) encoder.final_norm.apply(x.data(), time, depth, threads);
      Encoded& e = result[b];
      e.length = time;
      for (const auto& layer : decoder_layers) {
        kv.resize(static_cast<size_t>(time) * 2 * depth);
        layer.cross_kv.apply(x.data(), time, kv.data(), s);
        e.keys.push_back(columns(kv.data(), time, 2 * depth, 0, depth, threads));
        e.values.push_back(columns(kv.data(), time, 2 * depth, depth, depth, threads));
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
  Decoding(const Model& model, std::vector<Encoded> encoded, int end_id, int threads = 1)
      : end_id_(end_id),
        threads_(threads),
        m_(model),
        encoded_(std::move(encoded)),
        keys_(model.decoder_layers.size()),
        values_(model.decoder_layers.size()) {
    s_.threads = threads;
  }

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
      moved_.resize(rows);
      for (int r = 0; r < rows; ++r) moved_[r] = level[parents[r]];
      level.swap(moved_);
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
        m_.decoder.embed(last_ids[r], t, depth, row);
      }
    }
    if (m_.decoder.embedding_norm.present())
      m_.decoder.embedding_norm.apply(x_.data(), rows, depth, threads_);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    for (size_t li = 0; li < m_.decoder_layers.size(); ++li) {
      const DecoderLayer& layer = m_.decoder_layers[li];
      qkv_.resize(static_cast<size_t>(rows) * 3 * depth);
      const float* in = m_.sublayer_input(x_.data(), rows, layer.self_norm, normed_, threads_);
      layer.self_qkv.apply(in, rows, qkv_.data(), s_);
      keys_[li].push_back(columns(qkv_.data(), rows, 3 * depth, depth, depth, threads_));
      values_[li].push_back(columns(qkv_.data(), rows, 3 * depth, 2 * depth, depth, threads_));
      const auto& layer_keys = keys_[li];
      const auto& layer_values = values_[li];
      att_.assign(static_cast<size_t>(rows) * depth, 0.0f);
      for_each_row(rows, threads_, [&](int r) {
        thread_local Floats q, weights;
        for (int h = 0; h < m_.heads; ++h) {
          const int offset = h * hd;
          attend(
              qkv_.data() + static_cast<size_t>(r) * 3 * depth + offset, scale, t + 1, hd,
              [&](int j) {
                return layer_keys[j].data() + static_cast<size_t>(ancestors_[j][r]) * depth +
                       offset;
              },
              [&](int j) {
                return layer_values[j].data() + static_cast<size_t>(ancestors_[j][r]) * depth +
                       offset;
              },
              att_.data() + static_cast<size_t>(r) * depth + offset, q, weights);
        }
      });
      h_.resize(static_cast<size_t>(rows) * depth);
      layer.self_out.apply(att_.data(), rows, h_.data(), s_);
      m_.residual(x_.data(), h_.data(), rows, layer.self_norm, threads_);
      // cross-attention
      cq_.resize(static_cast<size_t>(rows) * depth);
      in = m_.sublayer_input(x_.data(), rows, layer.cross_norm, normed_, threads_);
      layer.cross_q.apply(in, rows, cq_.data(), s_);
      for_each_row(rows, threads_, [&](int r) {
        thread_local Floats q, weights;
        const Encoded& e = encoded_[row_sentences[r]];
        const float* ek = e.keys[li].data();
        const float* ev = e.values[li].data();
        for (int h = 0; h < m_.heads; ++h) {
          const int offset = h * hd;
          attend(
              cq_.data() + static_cast<size_t>(r) * depth + offset, scale, e.length, hd,
              [&](int j) { return ek + static_cast<size_t>(j) * depth + offset; },
              [&](int j) { return ev + static_cast<size_t>(j) * depth + offset; },
              att_.data() + static_cast<size_t>(r) * depth + offset, q, weights);
        }
      });
      layer.cross_out.apply(att_.data(), rows, h_.data(), s_);
      m_.residual(x_.data(), h_.data(), rows, layer.cross_norm, threads_);
      // feed-forward
      inner_.resize(static_cast<size_t>(rows) * layer.ffn_inner.out);
      in = m_.sublayer_input(x_.data(), rows, layer.ffn_norm, normed_, threads_);
      layer.ffn_inner.apply(in, rows, inner_.data(), s_);
      activate(inner_.data(), rows, layer.ffn_inner.out, m_.activation, threads_);
      layer.ffn_outer.apply(inner_.data(), rows, h_.data(), s_);
      m_.residual(x_.data(), h_.data(), rows, layer.ffn_norm, threads_);
    }
    if (m_.decoder.final_norm.present())
      m_.decoder.final_norm.apply(x_.data(), rows, depth, threads_);
    const int vocab = m_.vocab;
    logits_.resize(static_cast<size_t>(rows) * vocab);
    m_.projection.apply(x_.data(), rows, logits_.data(), s_);
    for_each_row(rows, threads_, [&](int r) {
      float* row = logits_.data() + static_cast<size_t>(r) * vocab;
      if (mask_end) row[end_id_] = -std::numeric_limits<float>::infinity();
      const float top = max_of(row, vocab);
      const float shift = top + std::log(sum_exp(row, vocab, top));
#pragma omp simd
      for (int i = 0; i < vocab; ++i) row[i] -= shift;
    });
    ++step_;
    return logits_.data();
  }

 private:
  int end_id_;
  int threads_;
  const Model& m_;
  std::vector<Encoded> encoded_;
  std::vector<std::vector<Floats>> keys_, values_;  // [layer][step] -> [rows, depth]
  std::vector<std::vector<int>> ancestors_;
  std::vector<int> moved_;  // scratch for reordering ancestors_
  int step_ = 0;
  Scratch s_;
  Floats x_, qkv_, att_, h_, cq_, inner_, logits_, normed_;
};

}  // namespace tm_guide_fused
