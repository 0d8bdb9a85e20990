// Off-chip memory as seen by the operators: the tensors placed in HBM, the TLM-2.0 path to the
// HBM target, and model-time ordering of requests from all address generators.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "hw/ops/op.h"
#include "sim/graph.h"

namespace stepsim {

class OffChipMemory : public sc_core::sc_module {
 public:
  OffChipMemory(sc_core::sc_module_name name, SimEnv& env, const std::vector<TensorSpec>& tensors);
  ~OffChipMemory() override;

  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }
  void write_outputs(const std::string& dir);

 private:
  SimEnv& env_;
  std::vector<TensorSpec> tensors_;
  uint64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace stepsim
