// Compute unit skeleton, element-wise lane (docs/units.md): Map with the tile functions `mul`
// (cfg_op_i = 0) or `add` (1) on two bf16 vector-tile streams a and b. Each beat carries a
// [1 x L] bf16 tile, lane j in bits [16j+15:16j]; every lane computes the fp32 product or sum
// (fp32_arith.h: round to nearest even, exact for bf16 products) and rounds it to bf16 once,
// which is hw/functions' map "mul"/"add" on bf16 tiles bit for bit. The output beat takes a's
// stops and done (both inputs have the same structure). One datapath stage.
// Latency 1 cycle, 1 beat (L lanes) per cycle. RTL twin: rtl/pcu_ew.sv.
#pragma once

#include "hw/units/fp32_arith.h"
#include "hw/units/protocol.h"

namespace stepsim::units {

template <int L = 8>
struct PcuEw : sc_core::sc_module {
  static constexpr int W = 16 * L;
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bool> cfg_op_i{"cfg_op_i"};  // 0 = mul, 1 = add; quasi-static
  STEPSIM_STREAM_IN(a, W);
  STEPSIM_STREAM_IN(b, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(PcuEw);
  explicit PcuEw(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  // The L lanes: bf16 in, fp32 mul or add, bf16 out.
  static bits_t<W> lanes(const bits_t<W>& a, const bits_t<W>& b, bool add) {
    bits_t<W> o = 0;
    for (int j = 0; j < L; ++j) {
      f32_t xa = 0, xb = 0;
      xa.range(31, 16) = a.range(16 * j + 15, 16 * j).to_uint();
      xb.range(31, 16) = b.range(16 * j + 15, 16 * j).to_uint();
      const f32_t r = add ? fp32_add(xa, xb) : fp32_mul(xa, xb);
      o.range(16 * j + 15, 16 * j) = bf16_round(r).to_uint();
    }
    return o;
  }

  void run() {
    InBuf<W> iba, ibb;
    OutReg<1, W> oq;
    iba.reset();
    ibb.reset();
    oq.reset();
    a_ready_o.write(false);
    b_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> ab, bb;
      STEPSIM_READ_IN(a, ab);
      STEPSIM_READ_IN(b, bb);
      iba.sample(a_valid_i.read(), ab);
      ibb.sample(b_valid_i.read(), bb);
      const bool oready = out_ready_i.read();
      const bool fire = iba.head_valid() && ibb.head_valid() && oq.can_load(oready);
      UBeat<W> o = iba.head();
      o.data = lanes(iba.head().data, ibb.head().data, cfg_op_i.read());
      iba.update(fire);
      ibb.update(fire);
      oq.update(oready, fire, o, true);
      a_ready_o.write(iba.ready());
      b_ready_o.write(ibb.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
