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
         const std::vector<std::shared_ptr<RewardTable>>& rewards,
         const std::vector<std::vector<int>>& prefixes,
         const std::vector<std::shared_ptr<Template>>& templates) {
        PythonSteps provider(std::move(step), cfg.vocab);
        std::vector<std::vector<Closed>> closed;
        {
          py::gil_scoped_release release;
          closed = run_search(provider, batch, caps, cfg, pointers(rewards), prefixes,
                              pointers(templates));
        }
        return to_python(closed);
      },
      "The compiled search over a Python step function (parents, sentences, last_ids, "
      "mask_end) -> log-probabilities [rows, vocab].");
}
