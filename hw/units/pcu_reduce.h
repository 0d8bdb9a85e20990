// Compute unit, row reductions (docs/units.md): Map with the tile functions `row_sum`
// (cfg_op_i = 0) or `row_max` (1) on [1 x L] bf16 vector tiles, giving [1 x 1] bf16 tiles
// (a 16-bit output payload), bit for bit as hw/functions: s = x_0, then s = s + x_j
// (fp32, round to nearest even) or s = max_f32(s, x_j) for j = 1..L-1 in order, rounded to
// bf16 once. Stops and done pass unchanged.
// One datapath stage (a chain of L-1 fp32 adders / max units). Latency 1 cycle, 1 beat per
// cycle. RTL twin: rtl/pcu_reduce.sv.
#pragma once

#include "hw/units/fp32_arith.h"
#include "hw/units/protocol.h"

namespace stepsim::units {

template <int L = 8>
struct PcuReduce : sc_core::sc_module {
  static_assert(L >= 1);
  static constexpr int W = 16 * L;
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bool> cfg_op_i{"cfg_op_i"};  // 0 = row_sum, 1 = row_max; quasi-static
  STEPSIM_STREAM_IN(in, W);
  STEPSIM_STREAM_OUT(out, 1, 16);

  SC_HAS_PROCESS(PcuReduce);
  explicit PcuReduce(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  // The row's fp32 reduction, left to right, rounded to bf16.
  static bf16_t reduce(const bits_t<W>& x, bool is_max) {
    f32_t s = f32_from_bf16(slice<16, W>(x, 0));
    for (int j = 1; j < L; ++j) {
      const f32_t e = f32_from_bf16(slice<16, W>(x, 16 * j));
      s = is_max ? fp32_max(s, e) : fp32_add(s, e);
    }
    return bf16_round(s);
  }

  void run() {
    InBuf<W> ib;
    OutReg<1, 16> oq;
    ib.reset();
    oq.reset();
    in_ready_o.write(false);
    STEPSIM_WRITE_OUT(out, oq);
    while (true) {
      wait();
      UBeat<W> inb;
      STEPSIM_READ_IN(in, inb);
      ib.sample(in_valid_i.read(), inb);
      const bool oready = out_ready_i.read();
      const bool fire = ib.head_valid() && oq.can_load(oready);
      const UBeat<W> h = ib.head();
      UBeat<16> o;
      o.elem = h.elem;
      o.data = reduce(h.data, cfg_op_i.read());
      o.stop = h.stop;
      o.done = h.done;
      ib.update(fire);
      oq.update(oready, fire, o, true);
      in_ready_o.write(ib.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
