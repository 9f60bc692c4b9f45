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

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels.h"
#include "layers.h"
#include "model.h"
#include "rewards.h"
#include "search.h"
#include "template.h"

namespace py = pybind11;
using namespace tm_guide_fused;

namespace {

class PythonSteps : public StepProvider {
 public:
  PythonSteps(py::function fn, int vocab) : fn_(std::move(fn)), vocab_(vocab) {}
  float* step(const int* parents, const std::vector<int>& row_sentences,
              const std::vector<int>& last_ids, bool mask_end) override {
    py::gil_scoped_acquire gil;
    const size_t rows = row_sentences.size();
    py::object p = py::none();
    if (parents)
      p = py::array_t<int64_t>(rows, std::vector<int64_t>(parents, parents + rows).data());
    py::array_t<int64_t> s(rows,
                           std::vector<int64_t>(row_sentences.begin(), row_sentences.end()).data());
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

// Rows of ids as one PAD-filled (-1) array [rows, widest].
py::array_t<int64_t> padded(const std::vector<std::vector<int>>& lists, size_t rows) {
  size_t width = 0;
  for (const auto& ids : lists) width = std::max(width, ids.size());
  py::array_t<int64_t> out({rows, width});
  auto view = out.mutable_unchecked<2>();
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < width; ++j)
      view(r, j) = r < lists.size() && j < lists[r].size() ? lists[r][j] : -1;
  return out;
}

template <typename T>
py::array_t<int64_t> int_array(const std::vector<T>& values) {
  py::array_t<int64_t> out(values.size());
  auto view = out.mutable_unchecked<1>();
  for (size_t i = 0; i < values.size(); ++i) view(i) = static_cast<int64_t>(values[i]);
  return out;
}

// A ranker that asks Python (the torch engine on its device, through
// tm_guide.decoding.compiled): (parents, sentences, last_ids, mask_end, request) ->
// (flat [groups, k], totals, log-probs, first column [rows]).
class PythonRanker : public CandidateProvider {
 public:
  explicit PythonRanker(py::function fn) : fn_(std::move(fn)) {}
  RankedStep rank(const int* parents, const std::vector<int>& row_sentences,
                  const std::vector<int>& last_ids, bool mask_end,
                  const StepRequest& request) override {
    py::gil_scoped_acquire gil;
    const size_t rows = row_sentences.size();
    py::object p = py::none();
    if (parents) p = int_array(std::vector<int>(parents, parents + rows));
    py::dict req;
    req["k"] = request.k;
    req["groups"] = request.groups;
    req["cum_scores"] = py::array_t<float>(request.cum_score.size(), request.cum_score.data());
    if (request.masks) {
      req["classes"] = int_array(request.classes);
      req["deny"] = padded(request.deny, rows);
      req["allow"] = padded(request.allow, rows);
      req["utf8_mode"] = int_array(request.utf8_mode);
      req["utf8_low"] = int_array(request.utf8_low);
      req["utf8_high"] = int_array(request.utf8_high);
    }
    req["reward_keys"] = int_array(request.reward_keys);
    req["reward_values"] =
        py::array_t<float>(request.reward_values.size(), request.reward_values.data());
    py::tuple out =
        fn_(p, int_array(row_sentences), int_array(last_ids), mask_end, req).cast<py::tuple>();
    auto flat = out[0].cast<py::array_t<int64_t, py::array::c_style | py::array::forcecast>>();
    auto totals = out[1].cast<FloatArray>();
    auto lp = out[2].cast<FloatArray>();
    auto first = out[3].cast<FloatArray>();
    const int groups = request.groups, k = request.k;
    if (flat.ndim() != 2 || flat.shape(0) != groups || flat.shape(1) != k ||
        totals.size() != flat.size() || lp.size() != flat.size() ||
        static_cast<size_t>(first.size()) != rows)
      throw std::invalid_argument("rank function returned the wrong shape");
    RankedStep found;
    found.tops.resize(groups);
    for (int g = 0; g < groups; ++g)
      for (int j = 0; j < k; ++j)
        found.tops[g].push_back(Candidate{totals.data()[g * k + j], flat.data()[g * k + j]});
    found.log_probs.assign(lp.data(), lp.data() + lp.size());
    found.first_column.assign(first.data(), first.data() + first.size());
    return found;
  }

 private:
  py::function fn_;
};

py::list to_python(const std::vector<std::vector<Closed>>& closed) {
  py::list result;
  for (const auto& sentence : closed) {
    py::list items;
    for (const auto& c : sentence)
      items.append(py::make_tuple(c.raw_score, py::tuple(py::cast(c.tokens)), c.log_prob, c.reward,
                                  c.length));
    result.append(items);
  }
  return result;
}

template <typename T>
std::vector<const T*> pointers(const std::vector<std::shared_ptr<T>>& items) {
  std::vector<const T*> out;
  for (const auto& p : items) out.push_back(p.get());
  return out;
}

using Rewards = std::vector<std::shared_ptr<RewardTable>>;
using Templates = std::vector<std::shared_ptr<Template>>;

// `search` (run_search or run_search_ranked) over `provider` with the GIL released: what a
// provider that calls Python needs, since it takes the GIL back for each call.
template <typename Provider, typename Search>
py::list search_released(Search search, Provider& provider, int batch, const std::vector<int>& caps,
                         const SearchConfig& cfg, const Rewards& rewards,
                         const std::vector<std::vector<int>>& prefixes,
                         const Templates& templates) {
  std::vector<std::vector<Closed>> closed;
  {
    py::gil_scoped_release release;
    closed = search(provider, batch, caps, cfg, pointers(rewards), prefixes, pointers(templates));
  }
  return to_python(closed);
}

}  // namespace

PYBIND11_MODULE(_fused, m) {
  m.doc() = "Fused int8 Transformer decoding and guided beam search (tm_guide.decoding.fused)";
  m.def(
      "kernel", []() { return std::string(kernel_name(active_kernel)); },
      "The kernel path the products and reductions run on.");
  m.def(
      "kernels",
      []() {
        std::vector<std::string> names;
        for (Kernel k : kAllKernels)
          if (kernel_supported(k)) names.push_back(kernel_name(k));
        return names;
      },
      "The kernel paths this CPU runs, fastest first.");
  m.def(
      "set_kernel",
      [](const std::string& name) {
        for (Kernel k : kAllKernels)
          if (name == kernel_name(k) && kernel_supported(k)) {
            active_kernel = k;
            return;
          }
        throw py::value_error("kernel '" + name + "' does not run on this CPU");
      },
      "Run another supported kernel path (tests and benchmarks compare them).");

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
      .def_readwrite("end_id", &SearchConfig::end_id)
      .def_readwrite("threads", &SearchConfig::threads)
      .def_readwrite("id_of_byte", &SearchConfig::id_of_byte);

  py::class_<RewardTable, std::shared_ptr<RewardTable>>(m, "RewardTable")
      .def(py::init<const std::vector<std::pair<std::vector<int>, double>>&, int, int,
                    const std::vector<int>&>(),
           py::arg("ngrams"), py::arg("max_n"), py::arg("vocab"),
           py::arg("limits") = std::vector<int>());

  py::class_<Template, std::shared_ptr<Template>>(m, "Template")
      .def(py::init<std::vector<int>, std::vector<int>, int, int, std::string, int,
                    std::vector<std::vector<int>>, std::vector<int>, std::vector<int>>(),
           py::arg("tokens"), py::arg("gaps"), py::arg("vocab"), py::arg("end_id"),
           py::arg("continues") = std::string(), py::arg("overrun") = 0,
           py::arg("ahead") = std::vector<std::vector<int>>(),
           py::arg("least") = std::vector<int>(), py::arg("joins") = std::vector<int>());

  py::class_<Model>(m, "Model")
      .def(py::init<py::dict, py::dict>())
      .def_readonly("vocab", &Model::vocab)
      .def(
          "search",
          [](const Model& model, const std::vector<std::vector<int>>& sources,
             const std::vector<int>& caps, const SearchConfig& cfg,
             const std::vector<std::shared_ptr<RewardTable>>& rewards,
             const std::vector<std::vector<int>>& prefixes,
             const std::vector<std::shared_ptr<Template>>& templates) {
            std::vector<std::vector<Closed>> closed;
            {
              py::gil_scoped_release release;
              Decoding decoding(model, model.encode(sources, cfg.threads), cfg.end_id, cfg.threads);
              closed = run_search(decoding, static_cast<int>(sources.size()), caps, cfg,
                                  pointers(rewards), prefixes, pointers(templates));
            }
            return to_python(closed);
          },
          "Guided beam search over source id lists (each output starting with its forced prefix "
          "ids, then following its template where it has one); per sentence its closed "
          "hypotheses.")
      .def(
          "score",
          [](const Model& model, const std::vector<int>& source, const std::vector<int>& target,
             int start_id, int end_id) {
            // log-probabilities of target (then </s>), teacher-forced one token at a time
            std::vector<float> scores;
            {
              py::gil_scoped_release release;
              Decoding decoding(model, model.encode({source}), end_id);
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
         const Rewards& rewards, const std::vector<std::vector<int>>& prefixes,
         const Templates& templates) {
        PythonSteps provider(std::move(step), cfg.vocab);
        return search_released(run_search, provider, batch, caps, cfg, rewards, prefixes,
                               templates);
      },
      "The compiled search over a Python step function (parents, sentences, last_ids, "
      "mask_end) -> log-probabilities [rows, vocab].");
  m.def(
      "search_with_ranker",
      [](py::function rank, int batch, const std::vector<int>& caps, const SearchConfig& cfg,
         const Rewards& rewards, const std::vector<std::vector<int>>& prefixes,
         const Templates& templates) {
        PythonRanker provider(std::move(rank));
        return search_released(run_search_ranked, provider, batch, caps, cfg, rewards, prefixes,
                               templates);
      },
      "The compiled search over an engine that ranks on its device: (parents, sentences, "
      "last_ids, mask_end, request) -> (flat [groups, k], totals, log-probs, first column).");
}
