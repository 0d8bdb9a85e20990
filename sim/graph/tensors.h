// Stored tensors of a graph (the `tensors:` section): checking their files, their initial
// values in functional mode, and writing the tensors a run stored as .npy.
#pragma once

#include <map>
#include <string>

#include "hw/memory/offchip.h"
#include "hw/stream/tile.h"
#include "sim/graph/graph.h"

namespace stepsim {

// init: file: checks the .npy exists, is readable, is complete (check_npy: the same checks
// as reading its values, in both modes) and matches the declared shape and dtype kind (float
// files for bf16/fp32, integer files for int32). Throws std::invalid_argument.
void check_tensor_file(const TensorSpec& t, const std::string& where);

// Values before the run, row-major: zeros; random (uniform in [-1, 1), or integers in
// [-8, 8) for int32, from a fixed generator seeded by `seed`: identical on every machine);
// file; output (zeros). bf16 values are rounded to bf16 when stored.
TileData initial_values(const TensorSpec& t);
// The same values of an init: random tensor as a function of the element index, for
// OffChipMemory::set_initial_values (made when a tile reads them, not before the run).
OffChipMemory::ElementSource random_values(const TensorSpec& t);

// Initial values given by name in memory (SimOptions::tensor_values): every name a tensor of `g`,
// with rows x cols values of its kind (float for bf16/fp32, integer for int32). Throws
// std::invalid_argument naming the tensor, its declaration and what was given.
void check_given_values(const Graph& g, const std::map<std::string, TileData>& values);

// Creates the output folder (and its parents) if needed; throws std::invalid_argument naming it
// when it cannot be made or is not a folder.
void prepare_output_dir(const std::string& dir);

// Writes DIR/NAME.npy (float32 for bf16/fp32, int32 for int32); returns the path.
std::string write_tensor_npy(const std::string& dir, const std::string& name, uint64_t rows, uint64_t cols, DType dtype,
                             const TileData& values);

// The off-chip memory's declaration of a graph tensor (its name, shape, dtype and blocks).
inline OffChipTensorDecl offchip_decl(const TensorSpec& t) {
  return OffChipTensorDecl{t.name, t.rows, t.cols, t.dtype, t.block_rows, t.block_cols};
}

}  // namespace stepsim
