// Reference documentation generated from the registries, so the docs cannot drift from the code:
//   stepsim ops --markdown      -> docs/operators.md (OpRegistry + tile-function libraries)
//   stepsim presets --markdown  -> docs/presets.md   (HardwareParams::fields() of every preset)
//   stepsim layers --markdown   -> docs/layers.md    (the layer library's registry, graphs/layers)
// scripts/gen_docs.sh writes the files; testbench/docs checks they are up to date.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "hw/ops/op.h"

namespace stepsim {

void write_ops_markdown(std::ostream& out);
void write_presets_markdown(std::ostream& out);
void write_layers_markdown(std::ostream& out);

// The cycle-accurate units that can run `op` (its descriptor's UnitRunners) for `impl` ("" = every
// implementation built in): "Pcu; Retile (fn retile_row)", or "none".
std::string units_text(const OpInfo& op, const std::string& impl = "");

}  // namespace stepsim
