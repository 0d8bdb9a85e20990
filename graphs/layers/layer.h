// The layer library: parameterized STeP programs for LLM layers, built with the C++ frontend
// (sim/frontend/builder.h). Layers are registered by name with typed, documented parameters
// (the same ParamSpec as operators), so `stepsim layers` lists them, `stepsim build LAYER
// --param k=v -o FILE.yaml` writes one as a graph file, and tests and figure scripts build
// them in-process.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hw/ops/params.h"
#include "sim/graph/graph.h"

namespace stepsim::layers {

struct LayerInfo {
  std::string name;
  std::string description;
  std::vector<ParamSpec> params;
  std::function<Graph(const Params&)> build;
};

class LayerRegistry {
 public:
  static LayerRegistry& instance();
  void add(LayerInfo info);
  const LayerInfo& find(const std::string& name) const;  // throws std::invalid_argument listing names
  std::vector<const LayerInfo*> all() const;

 private:
  std::map<std::string, LayerInfo> layers_;
};

// Builds layer `name` with parameter values given as text (unknown names and bad values throw
// std::invalid_argument naming the layer and the parameter). The graph's `tokens` (the energy per
// token) is the layer's `tokens` parameter, else its `batch`.
Graph build_layer(const std::string& name, const std::map<std::string, std::string>& params);

// Integer parameter `key` of layer `layer`, which must be >= 1 (std::invalid_argument otherwise,
// "layer LAYER: KEY must be >= 1, got V").
int64_t positive_param(const Params& p, const std::string& layer, const std::string& key);

// The MoE's experts and experts per token of each model family the MoE layers know (mixtral,
// qwen): what a caller choosing a family (the serving run's model files) checks against.
struct MoeFamily {
  int64_t experts, topk;
};
std::map<std::string, MoeFamily> moe_families();

// Expert bin counts of a routing trace (CSV token,expert0..expertK-1; `limit` first tokens).
std::vector<int64_t> expert_bins(const std::string& trace_file, size_t num_experts, size_t limit = 0);

void register_swiglu(LayerRegistry&);
void register_moe(LayerRegistry&);
void register_attention(LayerRegistry&);
void register_decoder(LayerRegistry&);
void register_prefill(LayerRegistry&);
void register_lm_head(LayerRegistry&);

}  // namespace stepsim::layers
