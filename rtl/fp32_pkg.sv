// The fp32 arithmetic of the compute units as functions, each written once (docs/units.md,
// architecture.md §6): round to nearest even, the special cases of hw/functions/numerics.h, bit
// for bit as the SystemC twins of hw/units/fp32_arith.h. The modules fp32_add, fp32_mul, ...
// are one-line wrappers of these functions. Functions, so that a unit can evaluate a datapath
// inside a clocked block, only at the edges that load its result (pcu_tile_accum, pcu_tile_map):
// a cycle-based simulator then computes it once per use instead of on every evaluation.
// Names as in numerics.h (add_f32 is a + b in fp32, ...).
package fp32_pkg;
  localparam logic [31:0] DefaultNaN = 32'hFFC00000;
  localparam logic [31:0] QuietBit = 32'h00400000;

  // Leading zeros of a 64-bit value, by halving (a log-depth priority encoder); 64 for 0.
  function automatic logic [6:0] clz64(logic [63:0] v_i);
    logic [63:0] v;
    logic [6:0]  n;
    v = v_i;
    n = 7'd0;
    if (v[63:32] == 32'd0) begin n = n + 7'd32; v = v << 32; end
    if (v[63:48] == 16'd0) begin n = n + 7'd16; v = v << 16; end
    if (v[63:56] == 8'd0) begin n = n + 7'd8; v = v << 8; end
    if (v[63:60] == 4'd0) begin n = n + 7'd4; v = v << 4; end
    if (v[63:62] == 2'd0) begin n = n + 7'd2; v = v << 2; end
    if (!v[63]) n = n + 7'd1;
    if (v == 64'd0) n = 7'd64;
    clz64 = n;
  endfunction

  function automatic logic is_nan(logic [30:0] x);  // x: the magnitude bits
    is_nan = (x[30:23] == 8'hFF) && (x[22:0] != 23'd0);
  endfunction
  function automatic logic is_inf(logic [30:0] x);
    is_inf = (x[30:23] == 8'hFF) && (x[22:0] == 23'd0);
  endfunction

  // A result below the normal range: the significand m (as round_pack_f32 takes it) shifted right
  // by sh >= 1 to exponent 1, the bits shifted out kept as the sticky bit.
  function automatic logic [26:0] subnormal_sig(logic [26:0] m, logic [11:0] sh);
    logic sticky;
    if (sh >= 12'd27) begin
      subnormal_sig = {26'd0, |m};
    end else begin
      sticky        = |(m & ((27'd1 << sh) - 27'd1));
      subnormal_sig = (m >> sh) | {26'd0, sticky};
    end
  endfunction

  // Rounds a significand to nearest-even and packs an fp32 value. sig: 24-bit significand in
  // [26:3], guard bit in [2], sticky in [1:0]; exp: biased exponent >= 1 (significand bit 26
  // clear with exp == 1 means subnormal). Exponents that reach 255 give Inf.
  function automatic logic [31:0] round_pack_f32(logic sign, logic [9:0] exp, logic [26:0] sig);
    logic        round_up;
    logic [24:0] s;
    logic [9:0]  e;
    round_up = sig[2] & (sig[1] | sig[0] | sig[3]);
    s        = {1'b0, sig[26:3]} + {24'd0, round_up};
    e        = exp;
    if (s[24]) begin
      s = s >> 1;
      e = e + 10'd1;
    end
    if (e >= 10'd255) round_pack_f32 = {sign, 8'hFF, 23'd0};
    else round_pack_f32 = {sign, s[23] ? e[7:0] : 8'd0, s[22:0]};
  endfunction

  // a + b. A NaN operand gives that NaN quieted (a's first); Inf - Inf gives DefaultNaN; an
  // exact zero sum is +0 unless both operands are -0.
  function automatic logic [31:0] add_f32(logic [31:0] a, logic [31:0] b);
    logic        a_nan, b_nan, a_inf, b_inf, swap, sign, sticky;
    logic [31:0] x, y;
    logic [7:0]  ex, ey, d;
    logic [23:0] mx, my;
    logic [27:0] mxs, mys, sum, diff;
    logic [26:0] m;
    logic [4:0]  lz;
    logic [9:0]  e;
    a_nan = is_nan(a[30:0]);
    b_nan = is_nan(b[30:0]);
    a_inf = is_inf(a[30:0]);
    b_inf = is_inf(b[30:0]);
    swap  = b[30:0] > a[30:0];
    x     = swap ? b : a;
    y     = swap ? a : b;
    ex    = (x[30:23] == 8'd0) ? 8'd1 : x[30:23];
    ey    = (y[30:23] == 8'd0) ? 8'd1 : y[30:23];
    mx    = {x[30:23] != 8'd0, x[22:0]};
    my    = {y[30:23] != 8'd0, y[22:0]};
    d     = ex - ey;
    mxs   = {1'b0, mx, 3'd0};
    mys   = {1'b0, my, 3'd0};
    // align the smaller operand, keeping a sticky bit
    if (d >= 8'd27) begin
      mys = {27'd0, my != 24'd0};
    end else begin
      sticky = |(mys & ((28'd1 << d) - 28'd1));
      mys    = (mys >> d) | {27'd0, sticky};
    end
    sign = x[31];
    e    = {2'd0, ex};
    sum  = mxs + mys;
    diff = mxs - mys;
    if (x[31] == y[31]) begin
      if (sum[27]) begin
        m = sum[27:1] | {26'd0, sum[0]};
        e = e + 10'd1;
      end else begin
        m = sum[26:0];
      end
    end else begin
      m  = diff[26:0];
      lz = 5'(clz64({m, 37'h1FFFFFFFFF}));  // 27 for m = 0
      if ({5'd0, lz} > e - 10'd1) lz = 5'(e - 10'd1);
      m  = m << lz;
      e  = e - {5'd0, lz};
    end
    if (a_nan) add_f32 = a | QuietBit;
    else if (b_nan) add_f32 = b | QuietBit;
    else if (a_inf && b_inf && (a[31] != b[31])) add_f32 = DefaultNaN;
    else if (a_inf) add_f32 = a;
    else if (b_inf) add_f32 = b;
    else if ((x[31] != y[31]) && (diff == 28'd0)) add_f32 = 32'd0;
    else if (e >= 10'd255) add_f32 = {sign, 8'hFF, 23'd0};
    else add_f32 = round_pack_f32(sign, e, m);
  endfunction

  // a * b. A NaN operand gives that NaN quieted (a's first); 0 * Inf gives DefaultNaN;
  // subnormal operands and results are exact IEEE.
  function automatic logic [31:0] mul_f32(logic [31:0] a, logic [31:0] b);
    logic        a_nan, b_nan, a_inf, b_inf, a_zero, b_zero, sign;
    logic [7:0]  ea, eb;
    logic [23:0] ma, mb;
    logic [47:0] p;
    logic [5:0]  lz;
    logic signed [10:0] e;
    logic [26:0] m;
    a_nan  = is_nan(a[30:0]);
    b_nan  = is_nan(b[30:0]);
    a_inf  = is_inf(a[30:0]);
    b_inf  = is_inf(b[30:0]);
    a_zero = a[30:0] == 31'd0;
    b_zero = b[30:0] == 31'd0;
    sign   = a[31] ^ b[31];
    ea     = (a[30:23] == 8'd0) ? 8'd1 : a[30:23];
    eb     = (b[30:23] == 8'd0) ? 8'd1 : b[30:23];
    ma     = {a[30:23] != 8'd0, a[22:0]};
    mb     = {b[30:23] != 8'd0, b[22:0]};
    p      = {24'd0, ma} * {24'd0, mb};
    lz     = 6'(clz64({p, 16'hFFFF}));  // 48 for p = 0
    p      = p << lz;
    e      = $signed({3'd0, ea}) + $signed({3'd0, eb}) - 11'sd126 - $signed({5'd0, lz});
    m      = p[47:21] | {26'd0, |p[20:0]};
    if (e < 11'sd1) begin
      m = subnormal_sig(m, 12'(11'sd1 - e));
      e = 11'sd1;
    end
    if (a_nan) mul_f32 = a | QuietBit;
    else if (b_nan) mul_f32 = b | QuietBit;
    else if ((a_inf && b_zero) || (b_inf && a_zero)) mul_f32 = DefaultNaN;
    else if (a_inf || b_inf) mul_f32 = {sign, 8'hFF, 23'd0};
    else if (a_zero || b_zero) mul_f32 = {sign, 31'd0};
    else if (e >= 11'sd255) mul_f32 = {sign, 8'hFF, 23'd0};
    else mul_f32 = round_pack_f32(sign, e[9:0], m);
  endfunction

  // a / b. A NaN operand gives that NaN quieted (a's first); 0/0 and Inf/Inf give DefaultNaN;
  // x/0 is Inf and x/Inf is 0, with the sign of the quotient; subnormal operands and results are
  // exact IEEE. The significands (subnormals normalized first) are divided by restoring
  // division: 27 quotient bits and a sticky remainder.
  function automatic logic [31:0] div_f32(logic [31:0] a, logic [31:0] b);
    logic        a_nan, b_nan, a_inf, b_inf, a_zero, b_zero, sign;
    logic [23:0] ma, mb;
    logic [4:0]  la, lb;
    logic [24:0] rem;
    logic [26:0] q, m;
    logic signed [11:0] e;
    a_nan  = is_nan(a[30:0]);
    b_nan  = is_nan(b[30:0]);
    a_inf  = is_inf(a[30:0]);
    b_inf  = is_inf(b[30:0]);
    a_zero = a[30:0] == 31'd0;
    b_zero = b[30:0] == 31'd0;
    sign   = a[31] ^ b[31];
    ma     = {a[30:23] != 8'd0, a[22:0]};
    mb     = {b[30:23] != 8'd0, b[22:0]};
    la     = 5'(clz64({ma, 40'hFFFFFFFFFF}));  // 24 for 0
    lb     = 5'(clz64({mb, 40'hFFFFFFFFFF}));
    ma     = ma << la;
    mb     = mb << lb;
    e      = $signed({4'd0, (a[30:23] == 8'd0) ? 8'd1 : a[30:23]}) - $signed({7'd0, la})
           - $signed({4'd0, (b[30:23] == 8'd0) ? 8'd1 : b[30:23]}) + $signed({7'd0, lb}) + 12'sd127;
    // q = floor(ma / mb * 2^26); ma / mb is in (1/2, 2)
    rem = {1'b0, ma};
    q   = 27'd0;
    for (int i = 26; i >= 0; i--) begin
      q[i] = rem >= {1'b0, mb};
      if (q[i]) rem = rem - {1'b0, mb};
      rem = rem << 1;
    end
    m = q;
    if (!q[26]) begin  // quotient below 1: one more bit of it is significant
      m = q << 1;
      e = e - 12'sd1;
    end
    m[0] = m[0] | (rem != 25'd0);
    if (e < 12'sd1) begin
      m = subnormal_sig(m, 12'(12'sd1 - e));
      e = 12'sd1;
    end
    if (a_nan) div_f32 = a | QuietBit;
    else if (b_nan) div_f32 = b | QuietBit;
    else if ((a_zero && b_zero) || (a_inf && b_inf)) div_f32 = DefaultNaN;
    else if (a_inf || b_zero) div_f32 = {sign, 8'hFF, 23'd0};
    else if (a_zero || b_inf) div_f32 = {sign, 31'd0};
    else if (e >= 12'sd255) div_f32 = {sign, 8'hFF, 23'd0};
    else div_f32 = round_pack_f32(sign, e[9:0], m);
  endfunction

  // The larger of a and b (numerics.h max_f32): a NaN operand gives that NaN quieted (a's
  // first); equal values (+0 and -0 too) give a unless a is negative, which prefers +0 over -0.
  function automatic logic [31:0] max_f32(logic [31:0] a, logic [31:0] b);
    logic a_nan, b_nan, a_gt;
    a_nan = is_nan(a[30:0]);
    b_nan = is_nan(b[30:0]);
    if (a[31] != b[31]) a_gt = ~a[31];
    else if (!a[31]) a_gt = a[30:0] > b[30:0];
    else a_gt = a[30:0] < b[30:0];
    if (a_nan) max_f32 = a | QuietBit;
    else if (b_nan) max_f32 = b | QuietBit;
    else if ((a == b) || (a[30:0] == 31'd0 && b[30:0] == 31'd0)) max_f32 = a[31] ? b : a;
    else max_f32 = a_gt ? a : b;
  endfunction

  // x rounded to bf16, ties to even; a NaN keeps its sign and upper payload, quieted
  // (= hw/stream/bf16.h bf16_bits_from_f32).
  function automatic logic [15:0] round_bf16(logic [31:0] x);
    if (is_nan(x[30:0])) round_bf16 = x[31:16] | 16'h0040;
    else round_bf16 = 16'((x + 32'h7FFF + {31'd0, x[16]}) >> 16);  // carry out of bit 31 dropped
  endfunction

  // 2^(j/64) for j = 0..63, fp32 (the table of exp_f32).
  function automatic logic [31:0] exp2_table(logic [5:0] idx);
    unique case (idx)
      6'd0:  exp2_table = 32'h3f800000;  6'd1:  exp2_table = 32'h3f8164d2;
      6'd2:  exp2_table = 32'h3f82cd87;  6'd3:  exp2_table = 32'h3f843a29;
      6'd4:  exp2_table = 32'h3f85aac3;  6'd5:  exp2_table = 32'h3f871f62;
      6'd6:  exp2_table = 32'h3f88980f;  6'd7:  exp2_table = 32'h3f8a14d5;
      6'd8:  exp2_table = 32'h3f8b95c2;  6'd9:  exp2_table = 32'h3f8d1adf;
      6'd10: exp2_table = 32'h3f8ea43a;  6'd11: exp2_table = 32'h3f9031dc;
      6'd12: exp2_table = 32'h3f91c3d3;  6'd13: exp2_table = 32'h3f935a2b;
      6'd14: exp2_table = 32'h3f94f4f0;  6'd15: exp2_table = 32'h3f96942d;
      6'd16: exp2_table = 32'h3f9837f0;  6'd17: exp2_table = 32'h3f99e046;
      6'd18: exp2_table = 32'h3f9b8d3a;  6'd19: exp2_table = 32'h3f9d3eda;
      6'd20: exp2_table = 32'h3f9ef532;  6'd21: exp2_table = 32'h3fa0b051;
      6'd22: exp2_table = 32'h3fa27043;  6'd23: exp2_table = 32'h3fa43516;
      6'd24: exp2_table = 32'h3fa5fed7;  6'd25: exp2_table = 32'h3fa7cd94;
      6'd26: exp2_table = 32'h3fa9a15b;  6'd27: exp2_table = 32'h3fab7a3a;
      6'd28: exp2_table = 32'h3fad583f;  6'd29: exp2_table = 32'h3faf3b79;
      6'd30: exp2_table = 32'h3fb123f6;  6'd31: exp2_table = 32'h3fb311c4;
      6'd32: exp2_table = 32'h3fb504f3;  6'd33: exp2_table = 32'h3fb6fd92;
      6'd34: exp2_table = 32'h3fb8fbaf;  6'd35: exp2_table = 32'h3fbaff5b;
      6'd36: exp2_table = 32'h3fbd08a4;  6'd37: exp2_table = 32'h3fbf179a;
      6'd38: exp2_table = 32'h3fc12c4d;  6'd39: exp2_table = 32'h3fc346cd;
      6'd40: exp2_table = 32'h3fc5672a;  6'd41: exp2_table = 32'h3fc78d75;
      6'd42: exp2_table = 32'h3fc9b9be;  6'd43: exp2_table = 32'h3fcbec15;
      6'd44: exp2_table = 32'h3fce248c;  6'd45: exp2_table = 32'h3fd06334;
      6'd46: exp2_table = 32'h3fd2a81e;  6'd47: exp2_table = 32'h3fd4f35b;
      6'd48: exp2_table = 32'h3fd744fd;  6'd49: exp2_table = 32'h3fd99d16;
      6'd50: exp2_table = 32'h3fdbfbb8;  6'd51: exp2_table = 32'h3fde60f5;
      6'd52: exp2_table = 32'h3fe0ccdf;  6'd53: exp2_table = 32'h3fe33f89;
      6'd54: exp2_table = 32'h3fe5b907;  6'd55: exp2_table = 32'h3fe8396a;
      6'd56: exp2_table = 32'h3feac0c7;  6'd57: exp2_table = 32'h3fed4f30;
      6'd58: exp2_table = 32'h3fefe4ba;  6'd59: exp2_table = 32'h3ff28177;
      6'd60: exp2_table = 32'h3ff5257d;  6'd61: exp2_table = 32'h3ff7d0df;
      6'd62: exp2_table = 32'h3ffa83b3;  default: exp2_table = 32'h3ffd3e0c;
    endcase
  endfunction

  // 2^e as fp32, -126 <= e <= 127.
  function automatic logic [31:0] pow2_f32(logic signed [15:0] e);
    logic [7:0] b;
    b        = 8'(e + 16'sd127);
    pow2_f32 = {1'b0, b, 23'd0};
  endfunction

  // exp_f32 of numerics.h: the same fp32 RNE operations in the same order (range clamps,
  // z = x * 64/ln2, n = round(z) by the 1.5*2^23 trick, Cody-Waite r = (x - n*L_HI) - n*L_LO,
  // q = r + (r*r) * (0.5 + r*C3), m = T[j] + T[j]*q with the 64-entry table of 2^(j/64), and the
  // scaling by 2^k as one or two exact power-of-two multiplications).
  function automatic logic [31:0] exp_f32(logic [31:0] x);
    localparam logic [31:0] Magic = 32'h4B400000;     // 0x1.8p23
    localparam logic [31:0] NegMagic = 32'hCB400000;
    localparam logic [31:0] InvLn2x64 = 32'h42B8AA3B;
    localparam logic [31:0] Ln2Hi = 32'h3C314000;
    localparam logic [31:0] Ln2Lo = 32'h37485FDF;
    localparam logic [31:0] C3 = 32'h3E2AAAAB;
    localparam logic [31:0] Half = 32'h3F000000;
    logic [31:0] n, nhi, nlo, r, q, tj, m, s1, s2;
    logic [23:0] nm;
    logic [14:0] nabs;
    logic signed [15:0] nn, k;
    n    = add_f32(add_f32(mul_f32(x, InvLn2x64), Magic), NegMagic);
    nhi  = mul_f32(n, Ln2Hi);
    nlo  = mul_f32(n, Ln2Lo);
    r    = add_f32(add_f32(x, {~nhi[31], nhi[30:0]}), {~nlo[31], nlo[30:0]});
    q    = add_f32(r, mul_f32(mul_f32(r, r), add_f32(Half, mul_f32(r, C3))));
    // N = (int32) n: n holds an integer of magnitude < 2^14 here
    nm   = {1'b1, n[22:0]};
    nabs = (n[30:23] < 8'd127) ? 15'd0 : 15'(nm >> (8'd150 - n[30:23]));
    nn   = n[31] ? -$signed({1'b0, nabs}) : $signed({1'b0, nabs});
    k    = nn >>> 6;
    tj   = exp2_table(nn[5:0]);
    m    = add_f32(tj, mul_f32(tj, q));
    if (k > 16'sd127) begin
      s1 = pow2_f32(16'sd127);
      s2 = pow2_f32(k - 16'sd127);
    end else if (k < -16'sd126) begin
      s1 = pow2_f32(k + 16'sd64);
      s2 = pow2_f32(-16'sd64);
    end else begin
      s1 = pow2_f32(k);
      s2 = 32'h3F800000;  // 1.0: exact
    end
    if (is_nan(x[30:0])) exp_f32 = x | QuietBit;
    else if (!x[31] && (x[30:0] > 31'h42B20000)) exp_f32 = 32'h7F800000;   // x > 89
    else if (x[31] && (x[30:0] > 31'h42D00000)) exp_f32 = 32'd0;           // x < -104
    else exp_f32 = mul_f32(mul_f32(m, s1), s2);
  endfunction

  // The functions of the exp unit (fn): exp_f32(x) (XfExp), sigmoid_f32(x) (XfSigmoid, and 3) or
  // silu_f32(x) (XfSilu) of numerics.h, on one exp_f32, the same fp32 RNE operations in the same
  // order: sigmoid: x >= 0: e = exp(-x), 1 / (1 + e); x < 0: e = exp(x), e / (1 + e) (-0 counts as
  // >= 0); a NaN x gives x quieted; silu = x * sigmoid.
  localparam logic [1:0] XfExp = 2'd0;
  localparam logic [1:0] XfSigmoid = 2'd1;
  localparam logic [1:0] XfSilu = 2'd2;
  function automatic logic [31:0] xf_f32(logic [1:0] fn, logic [31:0] x);
    localparam logic [31:0] One = 32'h3F800000;
    logic        neg;
    logic [31:0] e, sigmoid;
    neg = x[31] && (x[30:0] != 31'd0);
    e   = exp_f32((fn == XfExp || neg) ? x : {~x[31], x[30:0]});
    if (is_nan(x[30:0])) sigmoid = x | QuietBit;
    else sigmoid = div_f32(neg ? e : One, add_f32(One, e));
    unique case (fn)
      XfExp:     xf_f32 = e;
      XfSigmoid: xf_f32 = sigmoid;
      XfSilu:    xf_f32 = mul_f32(x, sigmoid);
      default:   xf_f32 = sigmoid;
    endcase
  endfunction
endpackage
