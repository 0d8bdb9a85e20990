// What kind of operator a descriptor (OpInfo, hw/ops/op.h) describes, and its category, as enums:
// code that treats an operator specially compares these, never its name. Each operator's name is
// written once, in its registration (hw/ops/*.cpp); op_name(kind) gives it back.
#pragma once

#include <cstdint>

namespace stepsim {

// One per operator. A new operator adds its kind here, and the compiler then names every switch
// that has to handle it (the shape rules, sim/shape/rules.cpp).
enum class OpKind : uint8_t {
  kSource,
  kSink,
  kLinearOffChipLoad,
  kLinearOffChipStore,
  kRandomOffChipLoad,
  kRandomOffChipStore,
  kBufferize,
  kStreamify,
  kBroadcast,
  kPartition,
  kReassemble,
  kEagerMerge,
  kParallelize,
  kMap,
  kAccum,
  kScan,
  kFlatMap,
  kFlatten,
  kReshape,
  kPromote,
  kExpand,
  kRepeat,
  kZip,
  kExpertAddrGen,
  kKvCacheAddrGen,
  kTopK,
};
constexpr int kNumOpKinds = int(OpKind::kTopK) + 1;

// The paper's operator families (docs/operators.md is grouped by them).
enum class OpCategory : uint8_t {
  kOffChipMemory,
  kOnChipMemory,
  kRouting,
  kHigherOrder,
  kShape,
  kAddressGeneration,
  kSourceSink,
};
constexpr int kNumOpCategories = int(OpCategory::kSourceSink) + 1;
// "off-chip memory", "on-chip memory", "routing", "higher-order", "shape", "address generation",
// "source/sink": the headings of the docs and of `stepsim ops`.
const char* category_name(OpCategory c);

// Which tile-function library a higher-order operator's `fn` parameter names (hw/functions).
enum class FunctionFamily : uint8_t { kNone, kMap, kAccum, kFlatMap };

}  // namespace stepsim
