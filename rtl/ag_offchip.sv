// Address generator (AG) with a memory port: LinearOffChipLoad (cfg_write_i = 0) and
// LinearOffChipStore (cfg_write_i = 1) on [r x T] bf16 tiles, r = cfg_tile_rows_i (1..T); the
// tile payload is the T^2 lanes and the tile header r in bits [16 T^2 +: RW] (docs/units.md,
// docs/unit-protocol.md). Tile k of the
// view (out_shape rank 1..MR, outermost first) is stored tile l = offset + sum idx_d stride_d
// at base + (l / tiles_c) A + (l % tiles_c) B, a burst of cfg_rows_i rows of cfg_row_bytes_i
// bytes cfg_pitch_i apart; offset and strides come as (quotient, remainder) by tiles_c, so
// the view is walked with adders and one carry per step. Requests are row-major (request c of
// a row uses min(64, row_bytes - 64c) bytes), issued P per cycle as bundles: request j of a
// tile in bundle j / P, a bundle never crosses a tile; at most MAXO outstanding. The memory
// answers bundle by bundle in request order (writes are acknowledged too), lane k of a
// response bundle answering lane k of its request bundle.
// Load: tiles on out (header r, lanes of rows >= r zero) with the view's stop levels and done
// on the last; cfg_ref_i = 1: one pass of the view per ref element (consumed with the pass's
// last request bundle), its stop raised above the view's rank on the pass's last tile, bare
// ref beats as bare beats, in ref order through the pass queue (PQ entries). Store: tiles from
// in (stops ignored) written to the view; one bare done on out once the input ended and every
// write is acknowledged; err_o (sticky) on a tile beyond the view or with a header other
// than r. A store ignores cfg_ref_i.
// Random access (cfg_random_i = 1, the view's cfg ignored): ref carries tile indices l
// ([IW-1:0]), each a pass of one tile at (l / tiles_c, l % tiles_c) (a restoring divider),
// stops and done kept as they are; an index >= cfg_tiles_i sets err_o. Load: the tiles on
// out. Store: the tile at l is the next tile of in (bare beats skipped), its acknowledgement
// leaves as the element 1 with the index's stop and done; a done leaves only after in has
// ended; an index without a tile passes bare, a tile after the last index is dropped (both
// err_o). One index stream per reset for a store.
// SystemC twin: hw/units/ag_offchip.h (same pins, same behaviour on every cycle).
`include "stream_macros.svh"
module ag_offchip #(
  parameter int T    = 4,
  parameter int MR   = 4,
  parameter int IW   = 16,
  parameter int AW   = 32,
  parameter int MAXO = 64,
  parameter int P    = 1,                   // request lanes (par_dispatch)
  parameter int RW   = $clog2(T + 1),       // derived: the tile header (rows 0..T)
  parameter int W    = 16 * T * T + RW,     // derived: the tile payload
  parameter int GW   = $clog2(2 * T * T + 1),  // derived: rows, row bytes, byte offsets
  parameter int DW   = 512,                 // fixed: 64-byte requests
  parameter int LW   = 7                    // fixed: request length 1..64
) (
  input  logic           clk_i,
  input  logic           rst_ni,
  // quasi-static configuration: change only in reset
  input  logic           cfg_write_i,     // 0 load, 1 store
  input  logic [3:0]     cfg_rank_i,      // view rank 1..MR
  input  logic [MR*IW-1:0] cfg_shape_i,   // out_shape d (outermost first) in [IW*d +: IW]
  input  logic [MR*IW-1:0] cfg_stride_q_i,  // stride d / tiles_c
  input  logic [MR*IW-1:0] cfg_stride_r_i,  // stride d % tiles_c
  input  logic [IW-1:0]  cfg_offset_q_i,
  input  logic [IW-1:0]  cfg_offset_r_i,
  input  logic [IW-1:0]  cfg_tiles_c_i,
  input  logic [AW-1:0]  cfg_base_i,
  input  logic [AW-1:0]  cfg_a_i,
  input  logic [AW-1:0]  cfg_b_i,
  input  logic [GW-1:0]  cfg_rows_i,
  input  logic [GW-1:0]  cfg_row_bytes_i,
  input  logic [AW-1:0]  cfg_pitch_i,
  input  logic [RW-1:0]  cfg_tile_rows_i,  // tile rows r, 1..T
  input  logic           cfg_ref_i,        // load: 1 = one pass of the view per ref element
  input  logic           cfg_random_i,     // 1 = random access: tile indices on ref
  input  logic [IW-1:0]  cfg_tiles_i,      // random access: stored tiles (larger indices: err_o)
  // in: the tiles to store
  `STREAM_IN_PORTS(in, W),
  // ref: the ref stream of a load with cfg_ref_i (payload ignored); cfg_random_i: tile indices
  `STREAM_IN_PORTS(ref, IW),
  // out: the loaded tiles (store: one bare done)
  `STREAM_OUT_PORTS(out, 1, W),
  // memory port
  // memory port: P lanes, lane k in [AW*k +: AW] etc.; a handshake moves a whole bundle
  output logic [P-1:0]    req_valid_o,  // lanes 0..n-1 of the bundle
  input  logic            req_ready_i,
  output logic [P*AW-1:0] req_addr_o,
  output logic            req_write_o,
  output logic [P*LW-1:0] req_len_o,
  output logic [P*DW-1:0] req_wdata_o,
  input  logic            rsp_valid_i,  // the response bundle of the oldest request bundle
  output logic            rsp_ready_o,
  input  logic [P*DW-1:0] rsp_data_i,
  output logic           err_o
);
  localparam int OW = $clog2(MAXO + 1);
  localparam int CW = OW + 1;  // request counts in a sum
  localparam int TW = 16 * T * T;  // the tile's lanes
  localparam int QW = (MAXO > 1) ? $clog2(MAXO) : 1;  // pass queue pointer
  localparam int PQ = 1 << QW;                        // pass queue entries (>= MAXO)

  // The response buffer carries data only.
  logic rsp_elem_i, rsp_done_i;
  logic [3:0] rsp_stop_i;
  assign rsp_elem_i = 1'b1;
  assign rsp_done_i = 1'b0;
  assign rsp_stop_i = 4'd0;

  logic consume_in, consume_r, consume_ref, ofree, emit;
  logic [W-1:0] o_data;
  logic         o_elem, o_done;
  logic [3:0]   o_stop;

  `STREAM_IN_BUF(in, h, W, consume_in);
  `STREAM_IN_BUF(rsp, r, P*DW, consume_r);
  `STREAM_IN_BUF(ref, f, IW, consume_ref);
  logic unused_r;
  assign unused_r = r_elem ^ r_done ^ (^r_stop) ^ (^h_stop);  // tile stops unused

  // ---- state
  logic [IW-1:0] g_idx_d [MR];
  logic [IW-1:0] g_idx_q [MR];
  logic [IW-1:0] g_q_d [MR];
  logic [IW-1:0] g_q_q [MR];
  logic [IW-1:0] g_r_d [MR];
  logic [IW-1:0] g_r_q [MR];
  logic [IW-1:0] a_idx_d [MR];
  logic [IW-1:0] a_idx_q [MR];
  logic [GW-1:0] g_row_d, g_row_q, g_chunk_d, g_chunk_q, g_ofs_d, g_ofs_q;
  logic [GW-1:0] a_row_d, a_row_q, a_chunk_d, a_chunk_q, a_ofs_d, a_ofs_q;
  logic [AW-1:0] g_rowaddr_d, g_rowaddr_q;
  logic          g_active_d, g_active_q, g_init_d, g_init_q;
  logic [TW-1:0] a_acc_d, a_acc_q;
  logic [OW-1:0] ocnt_d, ocnt_q;
  logic          st_in_done_d, st_in_done_q, st_sent_d, st_sent_q, err_d, err_q;
  logic          rf_done_d, rf_done_q;  // random store: the indices' done is in the pass queue
  logic [P-1:0]    rq_valid_d, rq_valid_q;
  logic            rq_write_d, rq_write_q;
  logic [P*AW-1:0] rq_addr_d, rq_addr_q;
  logic [P*LW-1:0] rq_len_d, rq_len_q;
  logic [P*DW-1:0] rq_wdata_d, rq_wdata_q;
  // the pass queue (ref mode): one entry per ref beat consumed; entries are read only while
  // valid (not reset)
  logic          pq_elem_q [PQ];
  logic [3:0]    pq_stop_q [PQ];
  logic          pq_done_q [PQ];
  logic [QW-1:0] pq_wp_d, pq_wp_q, pq_rp_d, pq_rp_q;
  logic [QW:0]   pq_n_d, pq_n_q;

  // Bytes used by request c of a row: min(64, row_bytes - 64c).
  function automatic logic [LW-1:0] used_bytes(logic [GW-1:0] row_bytes, logic [GW-1:0] chunk);
    logic [GW+6:0] left;
    left = (GW+7)'(row_bytes) - ((GW+7)'(chunk) << 6);
    used_bytes = (left >= (GW+7)'(64)) ? LW'(64) : LW'(left);
  endfunction
  function automatic logic last_chunk_of(logic [GW-1:0] row_bytes, logic [GW-1:0] chunk);
    last_chunk_of = (((GW+7)'(chunk) + (GW+7)'(1)) << 6) >= (GW+7)'(row_bytes);
  endfunction
  // The low len bytes of a 64-byte lane, the rest zero.
  function automatic logic [DW-1:0] low_bytes(logic [DW-1:0] v, logic [LW-1:0] len);
    low_bytes = v & ({DW{1'b1}} >> (10'(DW) - {3'b000, len} * 10'd8));
  endfunction

  // l / d and l % d by restoring division, one subtract step per bit (d = 0: all ones and l).
  function automatic logic [2*IW-1:0] divide(logic [IW-1:0] l, logic [IW-1:0] d);
    logic [IW:0]   acc;
    logic [IW-1:0] q;
    acc = '0;
    q   = '0;
    for (int i = IW - 1; i >= 0; i--) begin
      acc = {acc[IW-1:0], l[i]};
      if (acc >= {1'b0, d}) begin
        acc  = acc - {1'b0, d};
        q[i] = 1'b1;
      end
    end
    divide = {q, acc[IW-1:0]};
  endfunction

  // ---- combinational
  logic [IW-1:0] n  [MR];
  logic [IW-1:0] cq [MR];
  logic [IW-1:0] cr [MR];
  logic [AW-1:0] tile_base, w_start;
  logic [LW-1:0] len, r_len;
  logic [GW-1:0] w_row, w_chunk, w_ofs, r_row, r_chunk, r_ofs;
  logic          first_req, lc, r_lc, last_req, room, issue, carry, c2, run_on;
  logic          a_last, has_step, pass_end, pq_room, refm, pqv, q_elem, q_done, pass_last;
  logic          push, pop, any_bare;
  logic          randm, rstore, ref_drop, done_ok;
  logic [3:0]    rank, lift;
  logic [IW-1:0] lq, lr;
  logic [3:0]    q_stop, raised;
  logic [3:0]    step_d;
  logic [3:0]    ended;
  logic [P-1:0]    lanes;
  logic [P*AW-1:0] b_addr;
  logic [P*LW-1:0] b_len;
  logic [P*DW-1:0] b_wdata;
  logic [CW-1:0]   nb, rn;
  logic [W+DW-1:0] wsh;
  logic [TW+DW-1:0] rsh;
  logic [TW-1:0] merged;
  logic          unused_sh;
  assign unused_sh = ^{wsh[W+DW-1:DW], rsh[TW+DW-1:TW]};  // the shifts' spill
  logic [IW-1:0] q_s, r_s, sel_q, sel_r, nr, nq;
  logic [IW:0]   rr;
  logic          wrap;

  assign {lq, lr} = divide(f_data, cfg_tiles_c_i);  // random access: the index's position

  always_comb begin
    randm  = cfg_random_i;
    refm   = randm | (cfg_ref_i & ~cfg_write_i);  // passes through the pass queue (a linear store ignores cfg_ref_i)
    rstore = randm & cfg_write_i;
    rank   = randm ? 4'd1 : cfg_rank_i;  // random access: a view of one tile
    lift   = randm ? 4'd0 : rank;        // ref stops are raised above the view; an index's are not
    for (int d = 0; d < MR; d++) begin
      n[d]  = randm ? IW'(1) : cfg_shape_i[IW*d +: IW];
      cq[d] = !g_init_q ? g_q_q[d] : randm ? lq : cfg_offset_q_i;
      cr[d] = !g_init_q ? g_r_q[d] : randm ? lr : cfg_offset_r_i;
    end

    // ---- request side: the next bundle, up to P requests of the current tile
    tile_base  = cfg_base_i + AW'(cq[MR-1]) * cfg_a_i + AW'(cr[MR-1]) * cfg_b_i;
    first_req  = (g_row_q == '0) && (g_chunk_q == '0);
    w_row      = g_row_q;
    w_chunk    = g_chunk_q;
    w_ofs      = g_ofs_q;
    w_start    = first_req ? tile_base : g_rowaddr_q;
    lanes      = '0;
    b_addr     = '0;
    b_len      = '0;
    b_wdata    = '0;
    last_req   = 1'b0;
    nb         = '0;
    len        = '0;  // defaults: assigned only for the bundle's lanes (no latches)
    lc         = 1'b0;
    wsh        = '0;
    for (int k = 0; k < P; k++) begin
      if (!last_req) begin
        len                = used_bytes(cfg_row_bytes_i, w_chunk);
        lanes[k]           = 1'b1;
        b_addr[AW*k +: AW] = w_start + (AW'(w_chunk) << 6);
        b_len[LW*k +: LW]  = len;
        // Write data: the tile's bytes from the byte offset on (one barrel shift per lane),
        // bytes at and above the length zero.
        wsh = (W+DW)'(h_data) >> {w_ofs, 3'b000};
        if (cfg_write_i) begin
          b_wdata[DW*k +: DW] = low_bytes(wsh[DW-1:0], len);
        end
        lc       = last_chunk_of(cfg_row_bytes_i, w_chunk);
        last_req = lc && (w_row == cfg_rows_i - GW'(1));
        w_ofs    = w_ofs + GW'(len);
        if (lc) begin
          w_chunk = '0;
          w_row   = w_row + GW'(1);
          w_start = w_start + cfg_pitch_i;
        end else begin
          w_chunk = w_chunk + GW'(1);
        end
        nb = nb + CW'(1);
      end
    end
    // The next position: the innermost dimension that does not wrap steps by its stride.
    carry    = 1'b1;
    has_step = 1'b0;
    step_d   = 4'd0;
    q_s      = '0;
    r_s      = '0;
    sel_q    = '0;
    sel_r    = '0;
    for (int d = MR - 1; d >= 0; d--) begin
      if ((4'(d) < rank) && carry) begin
        if (g_idx_q[d] != n[d] - IW'(1)) begin
          has_step = 1'b1;
          step_d   = 4'(d);
          carry    = 1'b0;
          q_s      = cfg_stride_q_i[IW*d +: IW];
          r_s      = cfg_stride_r_i[IW*d +: IW];
          sel_q    = cq[d];
          sel_r    = cr[d];
        end
      end
    end
    pass_end    = last_req & ~has_step;  // the bundle ends the view's last tile
    pq_room     = pq_n_q != (QW+1)'(PQ);
    room        = (!rq_valid_q[0] || req_ready_i) && (CW'(ocnt_q) + nb <= CW'(MAXO));
    issue       = 1'b0;
    consume_in  = 1'b0;
    consume_ref = 1'b0;
    ref_drop    = 1'b0;
    err_d       = err_q;
    if (randm && f_valid && f_elem && (f_data >= cfg_tiles_i)) begin
      err_d = 1'b1;  // an index outside the tensor
    end
    if (!cfg_write_i) begin
      consume_in = h_valid;  // load: in is unused
      if (!refm) begin
        issue       = g_active_q & room;
        consume_ref = f_valid;  // static view: ref is unused
      end else if (f_valid && f_elem) begin
        // A pass while its ref element is at the head; the element (and its queue entry) goes
        // with the pass's last bundle.
        issue       = room & (~pass_end | pq_room);
        consume_ref = issue & pass_end;
      end else if (f_valid) begin
        consume_ref = pq_room;  // a bare stop or done: straight into the pass queue
      end
    end else if (rstore) begin
      // A write per index, its tile the next one of in; the index goes with the last bundle.
      if (h_valid && !h_elem) begin
        consume_in = 1'b1;  // a bare stop or done: nothing to write
      end else if (h_valid && rf_done_q) begin
        consume_in = 1'b1;  // a tile after the last index: dropped, flagged
        err_d      = 1'b1;
      end
      if (f_valid && f_elem) begin
        if (st_in_done_q) begin
          consume_ref = pq_room;  // in has ended: the index passes as a bare beat, flagged
          ref_drop    = 1'b1;
          err_d       = 1'b1;
        end else if (h_valid && h_elem) begin
          issue       = room & (~pass_end | pq_room);
          consume_ref = issue & pass_end;
          consume_in  = issue & last_req;
          if (issue && (h_data[TW +: RW] != cfg_tile_rows_i)) begin
            err_d = 1'b1;  // a tile of another shape
          end
        end
      end else if (f_valid) begin
        consume_ref = pq_room;  // a bare stop or done: straight into the pass queue
      end
    end else begin
      consume_ref = f_valid;  // a store ignores ref
      if (h_valid) begin
        if (!h_elem) begin
          consume_in = 1'b1;  // a bare stop or done: nothing to write
        end else if (!g_active_q) begin
          consume_in = 1'b1;  // beyond the view: dropped, flagged
          err_d      = 1'b1;
        end else if (room) begin
          issue      = 1'b1;
          consume_in = last_req;
          if (h_data[TW +: RW] != cfg_tile_rows_i) begin
            err_d = 1'b1;  // a tile of another shape
          end
        end
      end
    end
    rr   = (IW+1)'(sel_r) + (IW+1)'(r_s);
    wrap = rr >= (IW+1)'(cfg_tiles_c_i);
    nr   = wrap ? IW'(rr - (IW+1)'(cfg_tiles_c_i)) : IW'(rr);
    nq   = sel_q + q_s + IW'(wrap);

    // ---- response side: the bundle answering the oldest request bundle, the same lanes
    r_row   = a_row_q;
    r_chunk = a_chunk_q;
    r_ofs   = a_ofs_q;
    merged  = a_acc_q;
    a_last  = 1'b0;
    rn      = '0;
    r_len   = '0;  // defaults: assigned only for the bundle's lanes (no latches)
    r_lc    = 1'b0;
    rsh     = '0;
    for (int k = 0; k < P; k++) begin
      if (!a_last) begin
        r_len = used_bytes(cfg_row_bytes_i, r_chunk);
        // The response's used bytes land at the byte offset (one barrel shift per lane).
        rsh = (TW+DW)'(low_bytes(r_data[DW*k +: DW], r_len)) << {r_ofs, 3'b000};
        if (!cfg_write_i) begin
          merged = merged | rsh[TW-1:0];
        end
        r_lc   = last_chunk_of(cfg_row_bytes_i, r_chunk);
        a_last = r_lc && (r_row == cfg_rows_i - GW'(1));
        r_ofs  = r_ofs + GW'(r_len);
        if (r_lc) begin
          r_chunk = '0;
          r_row   = r_row + GW'(1);
        end else begin
          r_chunk = r_chunk + GW'(1);
        end
        rn = rn + CW'(1);
      end
    end
    ended  = 4'd0;
    run_on = 1'b1;
    for (int d = MR - 1; d >= 0; d--) begin
      if (4'(d) < rank) begin
        run_on = run_on & (a_idx_q[d] == n[d] - IW'(1));
        if (run_on) begin
          ended = ended + 4'd1;
        end
      end
    end
    // The pass queue's head (ref mode): the ref beat of the pass being assembled, or a bare
    // beat that comes before the responses still to arrive.
    pqv       = pq_n_q != '0;
    q_elem    = pqv & pq_elem_q[pq_rp_q];
    q_stop    = pqv ? pq_stop_q[pq_rp_q] : 4'd0;
    q_done    = pqv & pq_done_q[pq_rp_q];
    raised    = (q_stop != 4'd0) ? lift + q_stop : 4'd0;
    pass_last = ended == rank;  // the tile ends the pass
    done_ok   = ~rstore | st_in_done_q;  // a random store's done waits for the end of in too
    any_bare  = (q_stop != 4'd0) | q_done;
    consume_r = 1'b0;
    emit      = 1'b0;
    pop       = 1'b0;
    o_data    = '0;
    o_elem    = 1'b0;
    o_stop    = 4'd0;
    o_done    = 1'b0;
    st_sent_d = st_sent_q;
    if (cfg_write_i && !rstore) begin
      consume_r = r_valid;  // write acknowledgements
      if (st_in_done_q && (ocnt_q == '0) && !st_sent_q && ofree) begin
        emit      = 1'b1;
        o_done    = 1'b1;
        st_sent_d = 1'b1;
      end
    end else if (refm && pqv && !q_elem) begin
      // A bare ref beat: a bare stop raised above the view's dimensions, and/or a bare done.
      if (!any_bare || (ofree && (!q_done || done_ok))) begin
        pop    = 1'b1;
        emit   = any_bare;
        o_stop = raised;
        o_done = q_done;
      end
    end else if (r_valid && (!a_last || (ofree && (!refm || !pass_last || (pqv && (!q_done || done_ok)))))) begin
      consume_r = 1'b1;
      if (a_last) begin
        emit   = 1'b1;
        o_elem = 1'b1;
        o_data = rstore ? W'(1) : {cfg_tile_rows_i, merged};  // a random store: the acknowledgement
        o_stop = ended;
        o_done = !refm && pass_last;
        if (refm && pass_last) begin  // the pass's last tile: the ref element's stop and done
          pop = 1'b1;
          if ((q_stop != 4'd0) || randm) begin
            o_stop = raised;
          end
          o_done = q_done;
        end
      end
    end

    // ---- next state: request side
    for (int d = 0; d < MR; d++) begin
      g_idx_d[d] = g_idx_q[d];
      g_q_d[d]   = cq[d];
      g_r_d[d]   = cr[d];
    end
    g_row_d     = g_row_q;
    g_chunk_d   = g_chunk_q;
    g_ofs_d     = g_ofs_q;
    g_rowaddr_d = g_rowaddr_q;
    g_active_d  = g_active_q;
    g_init_d    = randm & g_init_q & ~issue;  // random access: the index's position until its first bundle
    rq_valid_d  = req_ready_i ? '0 : rq_valid_q;
    rq_addr_d   = rq_addr_q;
    rq_write_d  = rq_write_q;
    rq_len_d    = rq_len_q;
    rq_wdata_d  = rq_wdata_q;
    if (issue) begin
      rq_valid_d  = lanes;
      rq_addr_d   = b_addr;
      rq_write_d  = cfg_write_i;
      rq_len_d    = b_len;
      rq_wdata_d  = b_wdata;
      g_row_d     = w_row;
      g_chunk_d   = w_chunk;
      g_ofs_d     = w_ofs;
      g_rowaddr_d = w_start;
      if (last_req) begin
        g_row_d   = '0;
        g_chunk_d = '0;
        g_ofs_d   = '0;
        if (!has_step) begin
          if (refm) begin
            // The pass ends: the next one starts at the view's first tile (the offset).
            for (int d = 0; d < MR; d++) begin
              g_idx_d[d] = '0;
            end
            g_init_d = 1'b1;
          end else begin
            g_active_d = 1'b0;
          end
        end else begin
          // (q, r) + (sq, sr) with one carry; the inner levels restart from the new position.
          for (int d = 0; d < MR; d++) begin
            if (4'(d) == step_d) begin
              g_idx_d[d] = g_idx_q[d] + IW'(1);
            end
            if (4'(d) > step_d) begin
              g_idx_d[d] = '0;
            end
            if (4'(d) >= step_d) begin
              g_q_d[d] = nq;
              g_r_d[d] = nr;
            end
          end
        end
      end
    end
    st_in_done_d = st_in_done_q | (consume_in & h_done);
    rf_done_d    = rf_done_q | (consume_ref & rstore & f_done);

    // ---- next state: response side
    for (int d = 0; d < MR; d++) begin
      a_idx_d[d] = a_idx_q[d];
    end
    a_row_d   = a_row_q;
    a_chunk_d = a_chunk_q;
    a_ofs_d   = a_ofs_q;
    a_acc_d   = a_acc_q;
    c2        = 1'b1;
    if (consume_r) begin
      if (a_last) begin
        a_row_d   = '0;
        a_chunk_d = '0;
        a_ofs_d   = '0;
        a_acc_d   = '0;
        for (int d = MR - 1; d >= 0; d--) begin
          if ((4'(d) < rank) && c2) begin
            if (a_idx_q[d] == n[d] - IW'(1)) begin
              a_idx_d[d] = '0;
            end else begin
              a_idx_d[d] = a_idx_q[d] + IW'(1);
              c2 = 1'b0;
            end
          end
        end
      end else begin
        a_acc_d   = merged;
        a_ofs_d   = r_ofs;
        a_chunk_d = r_chunk;
        a_row_d   = r_row;
      end
    end
    ocnt_d = OW'(CW'(ocnt_q) + (issue ? nb : '0) - (consume_r ? rn : '0));

    // ---- the pass queue
    push    = consume_ref & refm;
    pq_wp_d = pq_wp_q + QW'(push);
    pq_rp_d = pq_rp_q + QW'(pop);
    pq_n_d  = pq_n_q + (QW+1)'(push) - (QW+1)'(pop);
  end

  always_ff @(posedge clk_i) begin
    if (push) begin
      pq_elem_q[pq_wp_q] <= f_elem & ~ref_drop;
      pq_stop_q[pq_wp_q] <= f_stop;
      pq_done_q[pq_wp_q] <= f_done;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int d = 0; d < MR; d++) begin
        g_idx_q[d] <= '0;
        g_q_q[d]   <= '0;
        g_r_q[d]   <= '0;
        a_idx_q[d] <= '0;
      end
      g_row_q      <= '0;
      g_chunk_q    <= '0;
      g_ofs_q      <= '0;
      g_rowaddr_q  <= '0;
      g_active_q   <= 1'b1;
      g_init_q     <= 1'b1;
      a_row_q      <= '0;
      a_chunk_q    <= '0;
      a_ofs_q      <= '0;
      a_acc_q      <= '0;
      ocnt_q       <= '0;
      st_in_done_q <= 1'b0;
      rf_done_q    <= 1'b0;
      st_sent_q    <= 1'b0;
      err_q        <= 1'b0;
      rq_valid_q   <= '0;
      rq_write_q   <= 1'b0;
      rq_addr_q    <= '0;
      rq_len_q     <= '0;
      rq_wdata_q   <= '0;
      pq_wp_q      <= '0;
      pq_rp_q      <= '0;
      pq_n_q       <= '0;
    end else begin
      for (int d = 0; d < MR; d++) begin
        g_idx_q[d] <= g_idx_d[d];
        g_q_q[d]   <= g_q_d[d];
        g_r_q[d]   <= g_r_d[d];
        a_idx_q[d] <= a_idx_d[d];
      end
      g_row_q      <= g_row_d;
      g_chunk_q    <= g_chunk_d;
      g_ofs_q      <= g_ofs_d;
      g_rowaddr_q  <= g_rowaddr_d;
      g_active_q   <= g_active_d;
      g_init_q     <= g_init_d;
      a_row_q      <= a_row_d;
      a_chunk_q    <= a_chunk_d;
      a_ofs_q      <= a_ofs_d;
      a_acc_q      <= a_acc_d;
      ocnt_q       <= ocnt_d;
      st_in_done_q <= st_in_done_d;
      rf_done_q    <= rf_done_d;
      st_sent_q    <= st_sent_d;
      err_q        <= err_d;
      rq_valid_q   <= rq_valid_d;
      rq_write_q   <= rq_write_d;
      rq_addr_q    <= rq_addr_d;
      rq_len_q     <= rq_len_d;
      rq_wdata_q   <= rq_wdata_d;
      pq_wp_q      <= pq_wp_d;
      pq_rp_q      <= pq_rp_d;
      pq_n_q       <= pq_n_d;
    end
  end

  assign req_valid_o = rq_valid_q;
  assign req_addr_o  = rq_addr_q;
  assign req_write_o = rq_write_q;
  assign req_len_o   = rq_len_q;
  assign req_wdata_o = rq_wdata_q;
  assign err_o       = err_q;

  `STREAM_OUT_REG(out, 1, W, emit, 1'b1, o_data, o_elem, o_stop, o_done, ofree);
endmodule
