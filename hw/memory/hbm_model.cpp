// The HBM model's statistics and the registry of its implementations (hw/memory/hbm_model.h).
// Adding a model: one row in kModels (docs/architecture.md, "The HBM model: interface and
// registry"). The table is written out here rather than filled by registrars in each model's
// file: the layers are static libraries, and a file nothing refers to would not be linked.
#include "hw/memory/hbm_model.h"

#include <numeric>
#include <stdexcept>

#include "hw/memory/hbm_dram.h"
#include "hw/memory/hbm_fixed.h"

namespace stepsim {

uint64_t HbmStats::busy_cycles() const {
  return std::accumulate(busy_cycles_per_channel.begin(), busy_cycles_per_channel.end(), uint64_t(0));
}

double HbmStats::achieved_bytes_per_cycle() const {
  if (requests() == 0 || last_completion_cycle <= first_issue_cycle) return 0.0;
  return double(bytes()) / double(last_completion_cycle - first_issue_cycle);
}

namespace {

template <class Model>
std::unique_ptr<HbmModel> make(const HbmParams& params) {
  return std::make_unique<Model>(params);
}

}  // namespace

const std::vector<HbmModelEntry>& hbm_model_registry() {
  static const std::vector<HbmModelEntry> kModels = {
      {"fixed", "channels with a fixed latency and initiation interval (the reference's HBM node)", make<HbmFixed>},
      {"dram", "HBM2 banks, rows and refresh under an FR-FCFS controller (docs/hbm-dram.md)", make<HbmDram>},
  };
  return kModels;
}

std::string hbm_model_names() {
  std::string names;
  for (const HbmModelEntry& e : hbm_model_registry()) names += (names.empty() ? "" : ", ") + std::string(e.name);
  return names;
}

std::unique_ptr<HbmModel> make_hbm_model(const std::string& name, const HbmParams& params) {
  for (const HbmModelEntry& e : hbm_model_registry())
    if (name == e.name) return e.make(params);
  throw std::invalid_argument("unknown HBM model '" + name + "' (hbm.model); known models: " + hbm_model_names());
}

}  // namespace stepsim
