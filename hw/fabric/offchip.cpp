#include "hw/fabric/offchip.h"

namespace stepsim {

OffChipMemory::OffChipMemory(sc_core::sc_module_name name, SimEnv& env, const std::vector<TensorSpec>& tensors)
    : sc_core::sc_module(name), env_(env), tensors_(tensors) {}

OffChipMemory::~OffChipMemory() = default;

void OffChipMemory::write_outputs(const std::string&) {}

}  // namespace stepsim
