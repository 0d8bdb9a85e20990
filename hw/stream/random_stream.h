// Legal random token streams for randomized tests (unit equivalence, co-simulation).
//
// A rank-r stream is a sequence of rank-r tensors (elements for r = 0); a rank-k tensor is a
// list of rank-(k-1) tensors, any of which may be empty. The tokens follow the paper's
// encoding exactly as observe_shape reads it: a tensor closed at level c ends with S_c on its
// last element (only the highest stop where several dimensions end together), an empty
// tensor is a bare S_c, and the stream ends with D. to_beats() of the result is canonical.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "hw/stream/token.h"

namespace stepsim {

// A tensor tree: a leaf holds one element; an inner node holds its children (maybe none).
struct TensorTree {
  bool leaf = false;
  Element elem;
  std::vector<TensorTree> children;
};

struct RandomStreamOptions {
  int rank = 1;             // stop levels used: 1..rank
  int max_len = 3;          // children per dimension: 0..max_len (top level too)
  double empty_prob = 0.2;  // probability that a dimension is empty
  // Element generator (default: scalars 0..99).
  std::function<Element(std::mt19937_64&)> element;
};

// Random top-level sequence of rank-`rank` tensors (leaves for rank 0).
std::vector<TensorTree> random_tensors(std::mt19937_64& rng, const RandomStreamOptions& o);
// Tokens of a top-level sequence of rank-`rank` tensors, ending with D.
std::vector<Token> tensors_to_tokens(const std::vector<TensorTree>& top, int rank);
// random_tensors + tensors_to_tokens.
std::vector<Token> random_stream(std::mt19937_64& rng, const RandomStreamOptions& o);

}  // namespace stepsim
