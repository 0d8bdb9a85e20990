// Runs the address-generator bench (ag_bench.h) over random cases and checks every case
// against the reference; shared by ag_test.cpp (HLS) and rtl/ag_lockstep_test.cpp (HLS and
// RTL in lock-step).
#pragma once

#include "testbench/units/ag_bench.h"

namespace stepsim::unit_test {

struct AgRun {
  BenchRun run;
  std::string error;  // first case that differs from the reference
  size_t loads = 0, stores = 0, tiles = 0, errs = 0;
  uint64_t requests = 0;
  size_t bundles = 0;  // checked bundles
};

// With check_bundles, every case's request bundles must be those of ag_expected_bundles (the
// bundles are told apart by their memory region, so the geometries must stay inside theirs:
// T = 16 cases of ag_cases do).
template <int T, class Rtl, int P = 1>
AgRun run_ag(const std::vector<UnitCase>& cases, uint64_t seed, bool full_rate = false, int latency = 1,
             bool check_bundles = false) {
  using B = AgBench<T, Rtl, P>;
  const std::vector<AgCfg> cfgs = ag_cfgs();
  fresh_kernel();
  B* b = new B();  // left behind with the kernel, as run_bench does
  b->elaborate(cases, seed);
  if (full_rate) {
    for (SourceBase* s : b->ctrl.sources) s->p_valid.assign(cases.size(), 1.0);
    for (OutBase* o : b->outs) o->set_always_ready();
    b->memory.no_stall = true;
    b->memory.fixed_latency = latency;
  }
  b->ctrl.cases = &cases;
  uint64_t budget = 200;
  for (const AgCfg& c : cfgs) budget += 100 + uint64_t(c.count() + 1) * uint64_t(c.rows) * 100;
  b->ctrl.max_cycles = budget;
  sc_core::sc_start();
  AgRun r;
  r.run.result = b->result;
  r.run.result.cycles = b->ctrl.cycle;
  r.run.out = b->outputs();
  r.run.out_at.push_back(b->out.at()[0]);
  r.run.in_at.push_back(b->in.src->sent);
  r.requests = b->memory.requests;
  if (!r.run.result.ok) return r;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<Beat>& got = r.run.out[0].at(i);
    const bool err = i < b->memory.err_at_done.size() && b->memory.err_at_done[i];
    const std::string e = check_ag<T, P>(cfgs[i], cases[i], got, b->memory, err);
    if (!e.empty()) {
      r.error = "case " + std::to_string(i) + ": " + e;
      return r;
    }
    (cfgs[i].write ? r.stores : r.loads)++;
    r.errs += err;
    r.tiles += cfgs[i].write ? size_t(cfgs[i].count()) : got.size();
  }
  if (check_bundles) {
    std::map<uint64_t, std::vector<std::vector<AgReq>>> by_region;
    for (const std::vector<AgReq>& bd : b->memory.bundles) by_region[bd.front().addr / ag_region(T)].push_back(bd);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::vector<std::vector<AgReq>> want = ag_expected_bundles(cfgs[i], cases[i], P);
      const auto& got = by_region[uint64_t(cfgs[i].base) / ag_region(T)];
      if (got != want) {
        size_t j = 0;
        while (j < got.size() && j < want.size() && got[j] == want[j]) ++j;
        r.error = "case " + std::to_string(i) + ": request bundle " + std::to_string(j) + " of " +
                  std::to_string(want.size()) + " differs (" + std::to_string(got.size()) + " bundles issued)";
        return r;
      }
      r.bundles += got.size();
    }
  }
  return r;
}

}  // namespace stepsim::unit_test
