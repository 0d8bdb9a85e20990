// A Verilated plain C++ model (--cc) as a unit of the rtl bridges, clocked by its bridge without
// SystemC (hw/bridge/direct_pins.h; rtl/units.list, flag `direct`). The unit tables name
// Direct<V<line>_direct>; the bridge binds the model's fields (model()) to its pins.
#pragma once

#include <verilated.h>

#include "hw/bridge/direct_pins.h"

namespace stepsim::bridge {

template <class V>
class Direct final : public DirectClock {
 public:
  static constexpr bool kDirect = true;
  using Model = V;
  explicit Direct(const char* name) : model_(&context_, name) {}
  ~Direct() override { model_.final(); }
  Direct(const Direct&) = delete;
  Direct& operator=(const Direct&) = delete;

  V& model() { return model_; }
  void set_reset(bool rst_n) override { model_.rst_ni = rst_n; }
  void settle() override { model_.eval(); }
  // The clock low (the inputs written since the last edge settle), then high: the rising edge.
  void edge() override {
    model_.clk_i = 0;
    model_.eval();
    model_.clk_i = 1;
    model_.eval();
  }

 private:
  VerilatedContext context_;  // one per model: the models share no state
  V model_;
};

}  // namespace stepsim::bridge
