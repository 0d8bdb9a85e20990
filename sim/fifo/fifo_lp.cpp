#include "sim/fifo/fifo_lp.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#ifdef STEPSIM_HAVE_GLPK
#include <glpk.h>
#endif

namespace stepsim {

void require_lp_solver() {
#ifndef STEPSIM_HAVE_GLPK
  throw std::runtime_error(
      "stepsim was built without GLPK, which FIFO sizing needs: install libglpk-dev and configure again");
#endif
}

#ifdef STEPSIM_HAVE_GLPK

namespace {

// D rounded up to whole beats (a solver's 3.0000001 is 3), at least 1, at most the channel's beats.
double whole_beats(double d, const LpChannel& c) {
  constexpr double kSolverSlack = 1e-6;
  return std::max(1.0, std::min(std::ceil(d - kSolverSlack), c.cap));
}

// The constraint matrix in GLPK's form: 1-based triplets (index 0 unused).
struct Triplets {
  std::vector<int> row{0}, col{0};
  std::vector<double> value{0};
  void add(int r, int c, double v) {
    row.push_back(r);
    col.push_back(c);
    value.push_back(v);
  }
};

// Columns: t_v = 1..n, then D_e = n+1..n+m.
void add_columns(glp_prob* lp, const std::vector<double>& latest, const std::vector<LpChannel>& ch) {
  const int n = int(latest.size());
  glp_add_cols(lp, n + int(ch.size()));
  for (int v = 0; v < n; ++v) {
    const double ub = latest[size_t(v)];
    glp_set_col_bnds(lp, v + 1, ub > 0 ? GLP_DB : GLP_FX, 0.0, std::max(0.0, ub));  // GLPK wants FX for lb == ub
  }
  for (size_t e = 0; e < ch.size(); ++e) {
    const int col = n + int(e) + 1;
    glp_set_col_bnds(lp, col, GLP_LO, ch[e].floor, 0.0);
    glp_set_obj_coef(lp, col, ch[e].weight);
  }
}

// Two rows per timed channel between two different nodes: the start order and the waiting beats.
// A channel from a node to itself only has its floor (its beats never wait for another input).
void add_rows(glp_prob* lp, size_t n, const std::vector<LpChannel>& ch, Triplets& m) {
  for (size_t e = 0; e < ch.size(); ++e) {
    const LpChannel& c = ch[e];
    if (c.from == c.to || !c.timed) continue;
    const int from = int(c.from) + 1, to = int(c.to) + 1, depth = int(n + e) + 1;
    int r = glp_add_rows(lp, 2);
    glp_set_row_bnds(lp, r, GLP_LO, c.lead, 0.0);  // t_to - t_from >= lead
    m.add(r, to, 1.0);
    m.add(r, from, -1.0);
    ++r;  // D - rate t_to + rate t_from >= floor - rate lead
    glp_set_row_bnds(lp, r, GLP_LO, c.floor - c.rate * c.lead, 0.0);
    m.add(r, depth, 1.0);
    if (c.rate > 0) {
      m.add(r, to, -c.rate);
      m.add(r, from, c.rate);
    }
  }
}

}  // namespace

LpSolution solve_fifo_lp(const std::vector<double>& latest_start, const std::vector<LpChannel>& channels) {
  LpSolution s;
  if (channels.empty()) {  // nothing to size (GLPK rejects a program without rows)
    s.start.assign(latest_start.size(), 0.0);
    return s;
  }
  glp_term_out(GLP_OFF);  // the solver's progress lines would land on stdout
  std::unique_ptr<glp_prob, void (*)(glp_prob*)> lp(glp_create_prob(), glp_delete_prob);
  glp_set_obj_dir(lp.get(), GLP_MIN);
  add_columns(lp.get(), latest_start, channels);
  Triplets m;
  add_rows(lp.get(), latest_start.size(), channels, m);
  if (glp_get_num_rows(lp.get()) == 0) {  // no timed channel between two nodes: their floors
    s.start.assign(latest_start.size(), 0.0);
    for (const LpChannel& c : channels) s.beats.push_back(whole_beats(c.floor, c));
    return s;
  }
  glp_load_matrix(lp.get(), int(m.row.size()) - 1, m.row.data(), m.col.data(), m.value.data());
  glp_smcp parm;
  glp_init_smcp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.presolve = GLP_ON;  // with presolve an infeasible program is reported, not an error
  const int ret = glp_simplex(lp.get(), &parm);
  if (ret != 0 || glp_get_status(lp.get()) != GLP_OPT)
    throw std::runtime_error("the FIFO-sizing linear program has no optimum (GLPK simplex returned " +
                             std::to_string(ret) + ", status " + std::to_string(glp_get_status(lp.get())) + ")");
  s.rows = size_t(glp_get_num_rows(lp.get()));
  s.columns = size_t(glp_get_num_cols(lp.get()));
  const size_t n = latest_start.size();
  for (size_t v = 0; v < n; ++v) s.start.push_back(glp_get_col_prim(lp.get(), int(v) + 1));
  for (size_t e = 0; e < channels.size(); ++e)
    s.beats.push_back(whole_beats(glp_get_col_prim(lp.get(), int(n + e) + 1), channels[e]));
  return s;
}

#else

LpSolution solve_fifo_lp(const std::vector<double>&, const std::vector<LpChannel>&) {
  require_lp_solver();
  return {};
}

#endif

}  // namespace stepsim
