// The linear program of FIFO sizing (stepsim size-fifos, docs/fifo-sizing.md), solved with GLPK.
// It knows nothing of the simulator: nodes are start times, channels are rates and latencies.
#pragma once

#include <cstddef>
#include <vector>

namespace stepsim {

// One channel, from node `from` to node `to` (indices into the node list). Times in cycles,
// amounts in beats.
struct LpChannel {
  size_t from = 0, to = 0;
  double lead = 0;    // its first beat reaches `to` this long after `from` starts
  double rate = 0;    // beats per cycle `from` sends on it while `to` has not started
  double floor = 1;   // beats it must hold in steady state (its rate over the round trip)
  double cap = 1;     // beats it carries in all: it never holds more (D_e is cut to it after solving)
  double weight = 1;  // bytes per beat
  bool timed = true;  // false: it carried no beat (no start order, no waiting beats; only its floor)
};

// Start time t_v of every node and beats D_e of every channel that
//   minimise   sum_e weight_e * D_e
//   subject to t_to - t_from >= lead_e                              (a node starts after its inputs' first beats)
//              D_e >= floor_e + rate_e * (t_to - t_from - lead_e)     (the beats that wait for the consumer)
//              D_e >= floor_e,  0 <= t_v <= latest_start_v            (the run's cycles within the tolerance)
// The beats that wait stop growing at cap_e, which a linear program cannot say: D_e is cut to cap_e
// afterwards (a cut that cannot starve anything: the channel then holds its whole stream).
struct LpSolution {
  std::vector<double> start;     // t_v
  std::vector<double> beats;     // D_e, rounded up and cut to cap_e
  size_t rows = 0, columns = 0;  // the program's size, for the report
};

// Throws std::runtime_error when stepsim was built without GLPK or the program has no optimum
// (it always has one when latest_start admits the deep run's own start times).
LpSolution solve_fifo_lp(const std::vector<double>& latest_start, const std::vector<LpChannel>& channels);

// Throws std::runtime_error when stepsim was built without GLPK (libglpk-dev), which size-fifos needs.
void require_lp_solver();

}  // namespace stepsim
