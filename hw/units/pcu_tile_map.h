// Compute unit on 2-D tiles, Map (docs/units.md): the tile functions `matmul` (cfg_op_i = 0),
// `matmul_t` (1), `mul` (2), `add` (3), `silu` (4), `exp` (5) and `sigmoid` (6) of hw/functions
// on [T x T] bf16 tiles, bit for bit.
// One beat carries one tile: lane (r, c) in bits [16(rT+c)+15 : 16(rT+c)] (row-major), then the
// tile header, its row count (TileBits in protocol.h). A dynamic tile [r x T] (r < T) is computed
// on all T rows; the result takes operand a's header (matmul [r x T] x [T x T] -> [r x T]; the
// element-wise functions keep a's shape), and its lanes of rows >= r are don't-care.
//
//   matmul    out[i][j] = p_0 + p_1 + ... + p_{T-1}, p_k = a[i][k] * b[k][j]
//   matmul_t  the same with p_k = a[i][k] * b[j][k] (b holds the weights [N x K])
//             each p_k is the fp32 product (RNE, exact for bf16 operands unless it overflows
//             or falls into the subnormals) and the sum runs left to right in fp32 (s = p_0;
//             s = s + p_k), as hw/functions matmul_accumulate; rounded to bf16 once.
//   mul, add  element-wise fp32 product / sum, rounded to bf16 once.
//   silu, exp, sigmoid  element-wise silu_f32 / exp_f32 / sigmoid_f32 of numerics.h (fp32_arith.h:
//             the same fp32 operations, the 64-entry table and the fp32 division), rounded to
//             bf16 once. Unary: input b is not consumed (its pins may stay idle).
//
// Pipeline: NS stages (T % NS == 0). Stage s computes the products k in [s·T/NS, (s+1)·T/NS)
// of every output and adds them to the partial sums in k order, as an output-stationary
// systolic pipeline: the operand tiles travel with the partial sums. The element-wise ops
// compute in stage 0 and pass through. The last stage rounds to bf16 into the output
// register. Stage registers and the output register advance together (a global stall while
// the output register holds a beat that is not taken). Latency NS cycles from the edge that
// accepts the inputs; initiation interval 1 (one tile per cycle without back-pressure).
// The output beat takes a's stops and done (both inputs have the same structure). The
// element-wise functions are one combinational stage 0 (silu: about 18 fp32 operations deep,
// with a divider); the Map matmul stages are a multiplier and T/NS adders deep.
// RTL twin: rtl/pcu_tile_map.sv.
#pragma once

#include "hw/units/fp32_arith.h"
#include "hw/units/protocol.h"

namespace stepsim::units {

// cfg_op_i of PcuTileMap: kTileMatmul .. kTileSigmoid (protocol.h).

// The lanes of a [T x T] bf16 tile payload (TileBits<T>: lanes, then the header), row-major.
template <int T>
inline void unpack_tile(const bits_t<TileBits<T>::W>& x, bf16_t* lanes) {
  for (int l = 0; l < T * T; ++l) lanes[l] = bf16_t(x.range(16 * l + 15, 16 * l).to_uint());
}

template <int T = 4, int NS = 2>
struct PcuTileMap : sc_core::sc_module {
  static_assert(T >= 1 && NS >= 1 && T % NS == 0, "NS pipeline stages of T/NS products each");
  static constexpr int W = TileBits<T>::W;
  static constexpr int N = T * T;
  static constexpr int KS = T / NS;  // products per output and stage
  sc_core::sc_in<bool> clk_i{"clk_i"};
  sc_core::sc_in<bool> rst_ni{"rst_ni"};
  sc_core::sc_in<bits_t<3>> cfg_op_i{"cfg_op_i"};  // kTileMatmul .. kTileSigmoid; quasi-static
  STEPSIM_STREAM_IN(a, W);
  STEPSIM_STREAM_IN(b, W);
  STEPSIM_STREAM_OUT(out, 1, W);

  SC_HAS_PROCESS(PcuTileMap);
  explicit PcuTileMap(sc_core::sc_module_name name) : sc_core::sc_module(name) {
    SC_CTHREAD(run, clk_i.pos());
    async_reset_signal_is(rst_ni, false);
  }

  // The contents of one pipeline register.
  struct Stage {
    bool v = false, elem = false, done = false;
    stop_t stop = 0;
    tile_rows_t<T> rows = 0;  // a's tile header
    f32_t s[N];               // partial sums (matmul) or results (element-wise), row-major
    bf16_t a[N];              // the operand tiles
    bf16_t b[N];
  };

  // Stage st of the datapath: `in` is its input (the input buffers' heads for stage 0).
  static void step(int st, int op, const Stage& in, Stage& o) {
    o = in;
    if (!(in.v && in.elem)) return;  // no element: the datapath's result is not used
    if (op >= kTileMul) {            // element-wise: stage 0
      if (st == 0)
        for (int l = 0; l < N; ++l) {
          const f32_t x = f32_from_bf16(in.a[l]), y = f32_from_bf16(in.b[l]);
          o.s[l] = op == kTileAdd    ? fp32_add(x, y)
                   : op == kTileMul  ? fp32_mul(x, y)
                   : op == kTileExp  ? fp32_exp(x)
                   : op == kTileSilu ? fp32_silu(x)
                                     : fp32_sigmoid(x);
        }
      return;
    }
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j) {
        f32_t s = in.s[i * T + j];
        for (int kk = 0; kk < KS; ++kk) {
          const int k = st * KS + kk;
          const f32_t x = f32_from_bf16(in.a[i * T + k]);
          const f32_t y = f32_from_bf16(op == kTileMatmul ? in.b[k * T + j] : in.b[j * T + k]);
          const f32_t p = fp32_mul(x, y);
          s = k == 0 ? p : fp32_add(s, p);
        }
        o.s[i * T + j] = s;
      }
  }

  void run() {
    InBuf<W> iba, ibb;
    OutReg<1, W> oq;
    Stage r[NS];  // r[0 .. NS-2]: the registers between the stages (reset: not valid)
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
      const bool adv = oq.can_load(oready);  // the whole pipeline moves
      const int op = int(cfg_op_i.read());
      const bool unary = op >= kTileSilu;
      const bool in_v = iba.head_valid() && (unary || ibb.head_valid());
      bool emit = false;
      UBeat<W> o;
      if (adv) {
        // Last stage first: each stage reads its input register before it is overwritten.
        for (int st = NS - 1; st >= 0; --st) {
          Stage src;
          if (st == 0) {
            const UBeat<W>& h = iba.head();
            src.v = in_v;
            src.elem = h.elem;
            src.stop = h.stop;
            src.done = h.done;
            src.rows = tile_rows<T>(h.data);
            if (in_v && h.elem) {
              unpack_tile<T>(h.data, src.a);
              if (!unary) unpack_tile<T>(ibb.head().data, src.b);
            }
          } else {
            src = r[st - 1];
          }
          Stage dst;
          step(st, op, src, dst);
          if (st == NS - 1) {
            emit = dst.v;
            o.elem = dst.elem;
            o.stop = dst.stop;
            o.done = dst.done;
            if (dst.elem) {
              for (int l = 0; l < N; ++l) o.data.range(16 * l + 15, 16 * l) = bf16_round(dst.s[l]).to_uint();
              set_tile_rows<T>(o.data, dst.rows);
            }
          } else {
            r[st] = dst;
          }
        }
      }
      iba.update(adv && in_v);
      ibb.update(adv && in_v && !unary);
      oq.update(oready, emit, o, true);
      a_ready_o.write(iba.ready());
      b_ready_o.write(ibb.ready());
      STEPSIM_WRITE_OUT(out, oq);
    }
  }
};

}  // namespace stepsim::units
