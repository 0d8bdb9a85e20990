// The operators' parameters as typed keys: each declared once here, used by the registrations
// (param_spec(param::kRank, ...), hw/ops/*.cpp) and by every reader (Params::get(param::kRank):
// the operators, the shape rules, the unit bridges, the builder), so a key is never spelled
// twice nor read as another type. Two operators' parameters share a key when they share name
// and type; `stride` is two keys (a view's strides, an index step).
#pragma once

#include "hw/ops/params.h"

namespace stepsim::param {

inline constexpr IntParam kBankRank{"bank_rank"};
inline constexpr IntParam kBase{"base"};
inline constexpr IntParam kChunk{"chunk"};
inline constexpr IntParam kCount{"count"};
inline constexpr BoolParam kExclusive{"exclusive"};
inline constexpr IntListParam kExperts{"experts"};
inline constexpr StringParam kFn{"fn"};
inline constexpr IntParam kIndexStride{"stride"};
inline constexpr IntParam kInterval{"interval"};
inline constexpr IntParam kK{"k"};
inline constexpr IntParam kMax{"max"};
inline constexpr IntParam kMaxTiles{"max_tiles"};
inline constexpr IntParam kMin{"min"};
inline constexpr IntParam kOffset{"offset"};
inline constexpr StringParam kOutFn{"out_fn"};
inline constexpr IntListParam kOutShape{"out_shape"};
inline constexpr StringParam kPad{"pad"};
inline constexpr IntParam kParDispatch{"par_dispatch"};
inline constexpr IntParam kRank{"rank"};
inline constexpr IntListParam kRepeat{"repeat"};
inline constexpr StringParam kStream{"stream"};
inline constexpr IntListParam kStride{"stride"};
inline constexpr StringParam kTensor{"tensor"};
inline constexpr IntListParam kTile{"tile"};
inline constexpr IntParam kTileRows{"tile_rows"};
inline constexpr IntParam kTilesPerExpert{"tiles_per_expert"};

}  // namespace stepsim::param
