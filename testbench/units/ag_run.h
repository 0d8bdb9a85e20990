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
  size_t ref_loads = 0, passes = 0, bare = 0;  // loads with a ref stream: passes, bare beats out
  size_t row_cases = 0;                        // cases with tiles of fewer than T rows
  size_t random_loads = 0, random_stores = 0;  // random access (RandomOffChipLoad / Store)
  uint64_t requests = 0;
  size_t bundles = 0;               // checked bundles
  std::vector<uint64_t> bundle_at;  // the edge that took each bundle
};

// With check_bundles, every case's request bundles must be those of ag_expected_bundles (the
// bundles are told apart by their memory region, so the geometries must stay inside theirs:
// T = 16 cases of ag_cases do; the cases of one region, a ref stream of streams without
// reset, in case order).
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
  for (size_t i = 0; i < cfgs.size(); ++i) {
    const AgCfg& c = cfgs[i];
    budget +=
        100 + uint64_t(c.count() * ag_passes(c, cases[i]) + 1 + cases[i].inputs[1].size()) * uint64_t(c.rows) * 100;
  }
  b->ctrl.max_cycles = budget;
  sc_core::sc_start();
  AgRun r;
  r.run.result = b->result;
  r.run.result.cycles = b->ctrl.cycle;
  r.run.out = b->outputs();
  r.run.out_at.push_back(b->out.at()[0]);
  r.run.in_at.push_back(b->in.src->sent);
  r.run.in_at.push_back(b->ref.src->sent);
  r.requests = b->memory.requests;
  r.bundle_at = b->memory.bundle_at;
  if (!r.run.result.ok) return r;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<Beat>& got = r.run.out[0].at(i);
    const bool err = i < b->memory.err_at_done.size() && b->memory.err_at_done[i];
    // err_o is sticky until a reset: a case that follows without one inherits it.
    const bool err_before = i > 0 && !cases[i].reset_before && b->memory.err_at_done[i - 1];
    const std::string e = check_ag<T, P>(cfgs[i], cases[i], got, b->memory, err, err_before);
    if (!e.empty()) {
      const AgCfg& c = cfgs[i];
      r.error = "case " + std::to_string(i) + " (" +
                (c.random ? "random "
                 : c.ref  ? "ref "
                          : "") +
                (c.write ? "store" : "load") + (cases[i].reset_before ? "" : ", no reset") + "): " + e;
      return r;
    }
    (cfgs[i].write ? r.stores : r.loads)++;
    r.errs += err;
    r.row_cases += cfgs[i].tr(T) < T;
    if (cfgs[i].random) (cfgs[i].write ? r.random_stores : r.random_loads)++;
    if (cfgs[i].ref) {
      ++r.ref_loads;
      r.passes += size_t(ag_passes(cfgs[i], cases[i]));
    }
    for (const Beat& x : got) {
      r.tiles += x.has_elem;
      r.bare += !cfgs[i].write && !x.has_elem;
    }
    if (cfgs[i].write && !cfgs[i].random) r.tiles += size_t(cfgs[i].count());  // (a random store: its acknowledgements)
  }
  if (check_bundles) {
    std::map<uint64_t, std::vector<std::vector<AgReq>>> by_region, want_region;
    std::map<uint64_t, size_t> first_case;
    for (const std::vector<AgReq>& bd : b->memory.bundles) by_region[bd.front().addr / ag_region(T)].push_back(bd);
    for (size_t i = 0; i < cases.size(); ++i) {
      const uint64_t reg = uint64_t(cfgs[i].base) / ag_region(T);
      first_case.emplace(reg, i);
      for (auto& bd : ag_expected_bundles(cfgs[i], cases[i], P)) want_region[reg].push_back(std::move(bd));
    }
    for (const auto& [reg, got] : by_region)
      if (!want_region.count(reg)) {
        r.error = "a request bundle at " + std::to_string(got.front().front().addr) + ", outside every case's region";
        return r;
      }
    for (const auto& [reg, want] : want_region) {
      const auto& got = by_region[reg];
      if (got != want) {
        size_t j = 0;
        while (j < got.size() && j < want.size() && got[j] == want[j]) ++j;
        r.error = "case " + std::to_string(first_case[reg]) + " (and the cases of its region): request bundle " +
                  std::to_string(j) + " of " + std::to_string(want.size()) + " differs (" + std::to_string(got.size()) +
                  " bundles issued)";
        return r;
      }
      r.bundles += got.size();
    }
  }
  return r;
}

}  // namespace stepsim::unit_test
