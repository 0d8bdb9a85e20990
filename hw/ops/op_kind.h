// What kind of operator a descriptor (OpInfo, hw/ops/op.h) describes, its category and the
// tile-function library its `fn` names, as enums (docs/architecture.md, "The operator
// descriptor"): code that treats an operator specially compares these, never its name. Each
// operator's name is written once, in its registration (hw/ops/*.cpp); op_name(kind) gives it back.
#pragma once

#include <cstdint>

namespace stepsim {

// One per operator. Tables indexed by the kind find a new one missing, not the compiler (no code
// switches over OpKind): OpRegistry::check_complete() fails at start-up while the kind has no
// registration, and Rules.EveryOperatorHasARuleAndCases (testbench/shape) while it has no shape
// rule in the table of sim/shape/rules.cpp. docs/architecture.md, "Add an operator", lists the steps.
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
constexpr int kNumOpKinds = int(OpKind::kTopK) + 1;  // kTopK is the last: a kind after it moves this

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
