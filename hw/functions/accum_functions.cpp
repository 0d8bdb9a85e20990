// Accum functions (see functions.h for the definitions and FLOP counts).
#include <algorithm>
#include <cmath>
#include <map>

#include "hw/functions/detail.h"
#include "hw/functions/functions.h"
#include "hw/functions/numerics.h"
#include "hw/stream/simd.h"

namespace stepsim {

namespace {

using detail::check_arity;
using detail::check_float;
using detail::fail;
using detail::finish;
using detail::mutable_payload;
using detail::payload_mode;
using detail::promote;

const std::string kAcc = "accum";

using ShapeFn = std::function<Tile(const Tile&, const std::vector<Tile>&)>;
// Computes the updated accumulator (payload) given the new accumulator shape.
using UpdateFn = std::function<Tile(Tile, const std::vector<Tile>&, const Tile&)>;
using OutShapeFn = std::function<Tile(const Tile&)>;
using FinalizeFn = std::function<Tile(const Tile&, const Tile&)>;

// `finalize_per_elem`: FLOPs of finalize per element of the emitted tile.
AccumFunction make_accum(const std::string& name, const std::string& desc, int arity, ShapeFn shape, FlopRule flop_rule,
                         UpdateFn update, OutShapeFn out_shape, FinalizeFn finalize = nullptr,
                         uint8_t finalize_per_elem = 0) {
  AccumFunction f;
  f.name = name;
  f.description = desc;
  f.arity = arity;
  f.matmul = flop_rule.kind == FlopRule::Kind::kMatmul;
  f.flop_rule = flop_rule;
  f.finalize_flops_per_out_elem = finalize_per_elem;
  f.init = [] { return shape_tile(0, 0, DType::FP32); };
  f.acc_shape = [name, arity, shape](const Tile& acc, const std::vector<Tile>& in) {
    check_arity(kAcc, name, arity, in);
    return shape(acc, in);
  };
  // The FLOPs of an update depend on its operands only: the shape an update of the empty
  // accumulator would give checks them (acc_shape checks the accumulator).
  f.arithmetic = [name, arity, shape, flop_rule](const Tile&, const std::vector<Tile>& in) {
    check_arity(kAcc, name, arity, in);
    return detail::arithmetic_of(flop_rule, in, shape(shape_tile(0, 0, DType::FP32), in));
  };
  f.update = [name, arity, shape, update](Tile acc, const std::vector<Tile>& in) {
    check_arity(kAcc, name, arity, in);
    Tile next = shape(acc, in);
    const bool payload = payload_mode(kAcc, name, in);
    if (!is_empty_acc(acc) && acc.has_data() != payload)
      fail(kAcc, name,
           "accumulator " + acc.to_string() +
               (acc.has_data() ? " has a payload but the inputs are shape-only"
                               : " is shape-only but the inputs carry payloads"));
    if (!payload) return next;
    return update(std::move(acc), in, next);
  };
  f.out_shape = [out_shape](const Tile& acc) {
    return is_empty_acc(acc) ? shape_tile(0, 0, acc.dtype) : out_shape(acc);
  };
  f.finalize_flops = [out_shape, finalize_per_elem](const Tile& acc) {
    return is_empty_acc(acc) ? uint64_t(0) : finalize_per_elem * out_shape(acc).elems();
  };
  f.finalize = [out_shape, finalize](const Tile& acc) {
    if (is_empty_acc(acc)) return shape_tile(0, 0, acc.dtype);
    Tile out = out_shape(acc);
    if (!acc.has_data()) return out;
    if (!finalize) {  // the accumulator is the output
      out.data = acc.data;
      return out;
    }
    return finalize(acc, out);
  };
  return f;
}

// Rounds the fp32 accumulator to the output dtype.
Tile round_out(const Tile& acc, const Tile& out) { return finish(out.rows, out.cols, out.dtype, acc.data->f); }

// ---- the loops, compiled per instruction set (hw/stream/simd.h) ----
// Each output element takes the operations of the definition in their order; the vectors run
// across elements, so every version gives the scalar loops' bits.

// a[k] = max(a[k], x[k]) or a[k] + x[k].
STEPSIM_SIMD_CLONES void accumulate_elements(bool is_max, float* a, const float* x, size_t n) {
  if (is_max)
    for (size_t k = 0; k < n; ++k) a[k] = max_f32(a[k], x[k]);
  else
    for (size_t k = 0; k < n; ++k) a[k] = a[k] + x[k];
}

// S [M x T] scores, V [T x D] values.
struct AttentionTiles {
  const float* S;
  const float* V;
  uint32_t M, T, D;
};

// One online-softmax update of A [M x (D + 2)] = [o | m | l] (flash_attn_fn's description),
// in three passes: per row the max over t in order, P[i][t] = exp(S - m) and their sum in
// order; PV = P V, each element summed over t in order (the matmul kernel: the same bits as a
// row at a time); per row the rescale. P: M x T floats, PV: M x D floats of scratch.
STEPSIM_SIMD_CLONES void flash_attn_weights(const AttentionTiles& in, bool first, const float* A, float* P, float* l) {
  const uint32_t T = in.T, D = in.D, W = D + 2;
  for (uint32_t i = 0; i < in.M; ++i) {
    const float* s = in.S + size_t(i) * T;
    const float* o = A + size_t(i) * W;
    float* p = P + size_t(i) * T;
    float mt = -INFINITY;
    for (uint32_t t = 0; t < T; ++t) mt = t == 0 ? s[0] : max_f32(mt, s[t]);
    const float m_new = first ? mt : max_f32(o[D], mt);
    const bool none = m_new == -INFINITY;
    for (uint32_t t = 0; t < T; ++t) p[t] = none ? 0.0f : exp_f32(s[t] - m_new);
    float ls = 0.0f;
    for (uint32_t t = 0; t < T; ++t) ls = t == 0 ? p[t] : ls + p[t];
    l[2 * i] = m_new;
    l[2 * i + 1] = ls;
  }
}

STEPSIM_SIMD_CLONES void flash_attn_rescale(const AttentionTiles& in, bool first, const float* PV, const float* l,
                                            float* A) {
  const uint32_t D = in.D, W = D + 2;
  for (uint32_t i = 0; i < in.M; ++i) {
    float* o = A + size_t(i) * W;
    const float* pv = PV + size_t(i) * D;
    const float m_old = o[D], l_old = o[D + 1], m_new = l[2 * i], ls = l[2 * i + 1];
    if (first) {
      for (uint32_t j = 0; j < D; ++j) o[j] = pv[j];
      o[D + 1] = ls;
    } else {
      const float a = m_new == -INFINITY ? 1.0f : exp_f32(m_old - m_new);
      for (uint32_t j = 0; j < D; ++j) o[j] = a * o[j] + pv[j];
      o[D + 1] = a * l_old + ls;
    }
    o[D] = m_new;
  }
}

void flash_attn_rows(const AttentionTiles& in, bool first, float* A) {
  std::vector<float> P(size_t(in.M) * in.T), PV(size_t(in.M) * in.D), l(2 * size_t(in.M));
  flash_attn_weights(in, first, A, P.data(), l.data());
  detail::matmul_accumulate(P.data(), in.V, in.M, in.T, in.D, PV.data(), true);  // T = 0: PV = +0
  flash_attn_rescale(in, first, PV.data(), l.data(), A);
}

// ---- matmul_acc ----
AccumFunction matmul_acc_fn(const std::string& name, bool bt, bool f32_out) {
  auto shape = [name, bt](const Tile& acc, const std::vector<Tile>& in) {
    auto d = detail::matmul_dims(kAcc, name, in[0], in[1], bt);
    if (!is_empty_acc(acc) && (acc.rows != d.M || acc.cols != d.N || acc.dtype != DType::FP32))
      fail(kAcc, name,
           "accumulator " + acc.to_string() + " does not match the product of A " + in[0].to_string() + " and B " +
               in[1].to_string() + " ([" + std::to_string(d.M) + "x" + std::to_string(d.N) + ":fp32])");
    return shape_tile(d.M, d.N, DType::FP32);
  };
  auto update = [bt](Tile acc, const std::vector<Tile>& in, const Tile& next) {
    if (is_empty_acc(acc)) {
      std::vector<float> v(next.elems());
      detail::matmul_accumulate(in[0], in[1], bt, v.data(), true);
      return finish(next.rows, next.cols, DType::FP32, std::move(v));
    }
    detail::matmul_accumulate(in[0], in[1], bt, mutable_payload(acc).f.data(), false);
    return acc;
  };
  auto out_shape = [f32_out](const Tile& acc) {
    return shape_tile(acc.rows, acc.cols, f32_out ? DType::FP32 : DType::BF16);
  };
  std::string desc = std::string("acc[MxN] += A[MxK] x ") + (bt ? "B[NxK]^T" : "B[KxN]") +
                     "; fp32 accumulator sized by the first update, k in order across tiles; " +
                     (f32_out ? "fp32" : "bf16") + " output; 2*M*K*N FLOPs per update";
  AccumFunction f = make_accum(name, desc, 2, shape, {FlopRule::Kind::kMatmul}, update, out_shape, round_out);
  f.signature = {TileSignature::Shape::kMatmul,
                 f32_out ? TileSignature::DTypeRule::kFp32 : TileSignature::DTypeRule::kBf16, bt};
  f.identity = 0.0f;
  return f;
}

// ---- elementwise add / max ----
AccumFunction elementwise_acc_fn(const std::string& name, bool is_max, bool f32_out) {
  auto shape = [name, is_max](const Tile& acc, const std::vector<Tile>& in) {
    const Tile& x = in[0];
    check_float(kAcc, name, x);
    if (is_empty_acc(acc)) return shape_tile(x.rows, x.cols, is_max ? x.dtype : DType::FP32);
    if (acc.rows != x.rows || acc.cols != x.cols)
      fail(kAcc, name, "input " + x.to_string() + " does not match the accumulator " + acc.to_string());
    return shape_tile(x.rows, x.cols, is_max ? promote(acc.dtype, x.dtype) : DType::FP32);
  };
  auto update = [is_max](Tile acc, const std::vector<Tile>& in, const Tile& next) {
    const std::vector<float>& x = in[0].data->f;
    if (is_empty_acc(acc)) {
      Tile t = next;
      t.data = in[0].data;  // exact in fp32; shared until modified
      return t;
    }
    std::vector<float>& a = mutable_payload(acc).f;
    accumulate_elements(is_max, a.data(), x.data(), a.size());
    acc.dtype = next.dtype;
    return acc;
  };
  if (is_max) {
    auto out_shape = [](const Tile& acc) { return shape_tile(acc.rows, acc.cols, acc.dtype); };
    AccumFunction f = make_accum(name,
                                 "acc = max(acc, x) elementwise (NaN-propagating); bf16 while all inputs "
                                 "are bf16, else fp32; M*N FLOPs per update",
                                 1, shape, {FlopRule::Kind::kPerInputElement, 1}, update, out_shape);
    f.signature = {TileSignature::Shape::kSameAsFirst, TileSignature::DTypeRule::kFirst};
    f.identity = -INFINITY;
    return f;
  }
  auto out_shape = [f32_out](const Tile& acc) {
    return shape_tile(acc.rows, acc.cols, f32_out ? DType::FP32 : DType::BF16);
  };
  AccumFunction f = make_accum(name,
                               std::string("acc = acc + x elementwise, fp32 accumulator; ") +
                                   (f32_out ? "fp32" : "bf16") + " output; M*N FLOPs per update",
                               1, shape, {FlopRule::Kind::kPerInputElement, 1}, update, out_shape, round_out);
  f.signature = {TileSignature::Shape::kSameAsFirst,
                 f32_out ? TileSignature::DTypeRule::kFp32 : TileSignature::DTypeRule::kBf16};
  f.identity = 0.0f;
  return f;
}

// ---- retile_row / retile_col ----
AccumFunction retile_fn(const std::string& name, bool rows) {
  auto shape = [name, rows](const Tile& acc, const std::vector<Tile>& in) {
    const Tile& x = in[0];
    if (is_empty_acc(acc)) return shape_tile(x.rows, x.cols, x.dtype);
    if (acc.dtype != x.dtype || (rows ? acc.cols != x.cols : acc.rows != x.rows))
      fail(kAcc, name,
           "cannot append " + x.to_string() + " to " + acc.to_string() +
               (rows ? " (needs equal cols and dtype)" : " (needs equal rows and dtype)"));
    return rows ? shape_tile(acc.rows + x.rows, x.cols, x.dtype) : shape_tile(x.rows, acc.cols + x.cols, x.dtype);
  };
  auto update = [rows](Tile acc, const std::vector<Tile>& in, const Tile& next) {
    const Tile& x = in[0];
    if (is_empty_acc(acc)) return x;  // shares the payload until the next append
    const bool is_int = x.dtype == DType::INT32;
    if (rows) {
      TileData& d = mutable_payload(acc);
      if (is_int)
        d.i.insert(d.i.end(), x.data->i.begin(), x.data->i.end());
      else
        d.f.insert(d.f.end(), x.data->f.begin(), x.data->f.end());
      acc.rows = next.rows;
      return acc;
    }
    auto d = std::make_shared<TileData>();
    auto interleave = [&](auto& out, const auto& a, const auto& b) {
      out.reserve(next.elems());
      for (uint32_t r = 0; r < next.rows; ++r) {
        out.insert(out.end(), a.begin() + size_t(r) * acc.cols, a.begin() + size_t(r + 1) * acc.cols);
        out.insert(out.end(), b.begin() + size_t(r) * x.cols, b.begin() + size_t(r + 1) * x.cols);
      }
    };
    if (is_int)
      interleave(d->i, acc.data->i, x.data->i);
    else
      interleave(d->f, acc.data->f, x.data->f);
    Tile t = next;
    t.data = std::move(d);
    return t;
  };
  auto out_shape = [](const Tile& acc) { return shape_tile(acc.rows, acc.cols, acc.dtype); };
  const char* desc = rows ? "concatenates tiles vertically: [r1xC],[r2xC].. -> [(r1+r2..)xC]; 0 FLOPs"
                          : "concatenates tiles horizontally: [Rxc1],[Rxc2].. -> [Rx(c1+c2..)]; 0 FLOPs";
  AccumFunction f = make_accum(name, desc, 1, shape, {FlopRule::Kind::kNone}, update, out_shape);
  f.signature = {rows ? TileSignature::Shape::kRetileRows : TileSignature::Shape::kRetileCols,
                 TileSignature::DTypeRule::kFirst};
  return f;
}

// ---- flash_attn_update ----
AccumFunction flash_attn_fn() {
  const std::string name = "flash_attn_update";
  auto dims = [name](const std::vector<Tile>& in) {
    const Tile &s = in[0], &v = in[1];
    check_float(kAcc, name, s);
    check_float(kAcc, name, v);
    if (s.cols != v.rows)
      fail(kAcc, name,
           "score tile S " + s.to_string() + " and value tile V " + v.to_string() +
               " disagree on T (expects S[MxT], V[TxD])");
    return detail::MatmulDims{s.rows, s.cols, v.cols};  // M, T, D
  };
  auto shape = [name, dims](const Tile& acc, const std::vector<Tile>& in) {
    auto d = dims(in);
    if (!is_empty_acc(acc) && (acc.rows != d.M || acc.cols != d.N + 2 || acc.dtype != DType::FP32))
      fail(kAcc, name,
           "accumulator " + acc.to_string() + " does not match S " + in[0].to_string() + ", V " + in[1].to_string() +
               " (expects [" + std::to_string(d.M) + "x" + std::to_string(d.N + 2) + ":fp32])");
    return shape_tile(d.M, d.N + 2, DType::FP32);
  };
  auto update = [](Tile acc, const std::vector<Tile>& in, const Tile& next) {
    const Tile &S = in[0], &V = in[1];
    const uint32_t M = S.rows, T = S.cols, D = V.cols, W = D + 2;
    const bool first = is_empty_acc(acc);
    if (first) acc = finish(M, W, DType::FP32, std::vector<float>(next.elems(), 0.0f));
    flash_attn_rows({S.data->f.data(), V.data->f.data(), M, T, D}, first, mutable_payload(acc).f.data());
    return acc;
  };
  auto out_shape = [](const Tile& acc) { return shape_tile(acc.rows, acc.cols - 2, DType::BF16); };
  auto finalize = [](const Tile& acc, const Tile& out) {
    const uint32_t D = out.cols, W = acc.cols;
    std::vector<float> v(out.elems());
    for (uint32_t i = 0; i < out.rows; ++i) {
      const float* o = acc.data->f.data() + size_t(i) * W;
      for (uint32_t j = 0; j < D; ++j) v[size_t(i) * D + j] = o[j] / o[D + 1];
    }
    return finish(out.rows, out.cols, out.dtype, std::move(v));
  };
  AccumFunction f = make_accum(name,
                               "online-softmax attention over KV tiles: inputs S[MxT], V[TxD]; acc fp32 "
                               "[Mx(D+2)] = [o | m | l]; finalize o/l -> [MxD] bf16",
                               2, shape, {FlopRule::Kind::kFlashAttention}, update, out_shape, finalize, 1);
  f.signature = {TileSignature::Shape::kFlashAttention, TileSignature::DTypeRule::kBf16};
  return f;
}

std::map<std::string, AccumFunction> build() {
  std::map<std::string, AccumFunction> m;
  // `lanes`: the units that compute the function bit for bit (none by default).
  auto add = [&m](AccumFunction f, UnitLanes lanes = {}) { detail::register_function(m, std::move(f), lanes); };
  using V = VectorLanes;
  add(matmul_acc_fn("matmul_acc", false, false), {UnitOp::kMatmul, V::kNone, true});
  add(matmul_acc_fn("matmul_t_acc", true, false), {UnitOp::kMatmulT, V::kNone, true});
  add(matmul_acc_fn("matmul_acc_f32", false, true));
  add(matmul_acc_fn("matmul_t_acc_f32", true, true));
  add(elementwise_acc_fn("add", false, false), {UnitOp::kAdd, V::kAccum, true});
  add(elementwise_acc_fn("add_f32", false, true));
  add(elementwise_acc_fn("max", true, false), {UnitOp::kMax, V::kAccum, true});
  add(retile_fn("retile_row", true), {UnitOp::kRetileRows, V::kNone, true});
  add(retile_fn("retile_col", false));
  add(flash_attn_fn());
  return m;
}

const std::map<std::string, AccumFunction>& registry() {
  static const std::map<std::string, AccumFunction> r = build();
  return r;
}

}  // namespace

Tile identity_output(const AccumFunction& f, const std::vector<Tile>& inputs) {
  if (!f.identity)
    detail::fail(kAcc, f.name, "has no identity element: a state that has seen nothing has no value to emit");
  const Tile out = f.out_shape(f.acc_shape(f.init(), inputs));
  if (!detail::payload_mode(kAcc, f.name, inputs)) return out;
  return detail::finish(out.rows, out.cols, out.dtype, std::vector<float>(out.elems(), *f.identity));
}

const AccumFunction& accum_function(const std::string& name) {
  const auto& r = registry();
  auto it = r.find(name);
  if (it == r.end()) {
    std::string known;
    for (const auto& [k, v] : r) known += (known.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown accum function '" + name + "'; known: " + known);
  }
  return it->second;
}

std::vector<std::string> accum_function_names() {
  std::vector<std::string> v;
  for (const auto& [k, f] : registry()) v.push_back(k);
  return v;
}

}  // namespace stepsim
