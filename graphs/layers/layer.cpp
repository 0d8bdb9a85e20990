#include "graphs/layers/layer.h"
#include "graphs/layers/blocks.h"

#include <algorithm>
#include <stdexcept>

#include "sim/graph/loader.h"

namespace stepsim::layers {

LayerRegistry& LayerRegistry::instance() {
  static LayerRegistry* r = [] {
    auto* reg = new LayerRegistry();
    register_swiglu(*reg);
    register_moe(*reg);
    register_attention(*reg);
    register_decoder(*reg);
    register_prefill(*reg);
    register_lm_head(*reg);
    return reg;
  }();
  return *r;
}

void LayerRegistry::add(LayerInfo info) {
  const std::string n = info.name;
  if (!layers_.emplace(n, std::move(info)).second) throw std::logic_error("layer '" + n + "' registered twice");
}

const LayerInfo& LayerRegistry::find(const std::string& name) const {
  auto it = layers_.find(name);
  if (it == layers_.end()) {
    std::string names;
    for (const auto& kv : layers_) names += (names.empty() ? "" : ", ") + kv.first;
    throw std::invalid_argument("unknown layer '" + name + "'; known: " + names);
  }
  return it->second;
}

std::vector<const LayerInfo*> LayerRegistry::all() const {
  std::vector<const LayerInfo*> v;
  for (const auto& kv : layers_) v.push_back(&kv.second);
  return v;
}

std::optional<frontend::Stream> phase_token(frontend::GraphBuilder& b, const std::string& name,
                                            const std::vector<frontend::Stream>& after) {
  if (after.empty()) return std::nullopt;
  b.literal_stream(name, "1 D");
  return b.source(name, name, 0, after);
}

Graph build_layer(const std::string& name, const std::map<std::string, std::string>& params) {
  const LayerInfo& info = LayerRegistry::instance().find(name);
  const Params p("layer " + info.name, name, &info.params, params);
  Graph g = info.build(p);
  // The tokens a run processes, for the energy per token: the layer's `tokens`, else its `batch`.
  for (const char* key : {"tokens", "batch"})
    if (std::any_of(info.params.begin(), info.params.end(), [&](const ParamSpec& s) { return s.name == key; })) {
      g.tokens = uint64_t(positive_param(p, info.name, key));
      break;
    }
  return g;
}

int64_t positive_param(const Params& p, const std::string& layer, const std::string& key) {
  const int64_t v = p.get_int(key);
  if (v < 1) throw std::invalid_argument("layer " + layer + ": " + key + " must be >= 1, got " + std::to_string(v));
  return v;
}

std::vector<int64_t> expert_bins(const std::string& trace_file, size_t num_experts, size_t limit) {
  CsvTable t = read_csv(trace_file);
  std::vector<int64_t> bins(num_experts, 0);
  size_t n = 0;
  for (const auto& row : t.rows) {
    if (limit && n++ >= limit) break;
    for (size_t c = 0; c < t.header.size(); ++c)
      if (t.header[c].rfind("expert", 0) == 0) {
        const long e = std::stol(row[c]);
        if (e < 0 || size_t(e) >= num_experts)
          throw std::invalid_argument(trace_file + ": expert id " + row[c] + " outside 0.." +
                                      std::to_string(num_experts - 1));
        ++bins[size_t(e)];
      }
  }
  return bins;
}

}  // namespace stepsim::layers
