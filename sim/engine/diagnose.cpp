#include "sim/engine/diagnose.h"

#include <algorithm>
#include <vector>

namespace stepsim {

namespace {

std::string state_text(const Context& c) {
  switch (c.state()) {
    case Context::State::kBlockedRecv:
      return "waits for data on '" + c.blocked_on()->name() + "' (empty)";
    case Context::State::kBlockedSend:
      return "waits for space on '" + c.blocked_on()->name() + "' (full, " +
             std::to_string(c.blocked_on()->occupancy()) + "/" +
             std::to_string(c.blocked_on()->params().depth + c.blocked_on()->params().inflight) + ")";
    case Context::State::kArbWait:
      return "waits for an arrival-order decision (inputs empty)";
    case Context::State::kRunnable:
      return "is runnable";
    case Context::State::kFinished:
      return "finished";
  }
  return "?";
}

// The first error of the run's operators ("" = none failed).
std::string first_failure(const Elaboration& e) {
  const Op* first = nullptr;
  for (const auto& [name, op] : e.ops)
    if (op->failure_order() && (!first || op->failure_order() < first->failure_order())) first = op.get();
  return first ? first->failure() : "";
}

// The blocked operators of a deadlock in three groups, most telling first: stuck on a full
// channel; waiting on an empty channel whose producer is blocked too; the rest (arbitration
// waits, producers that finished early). Within a group by node name, so that the message does
// not depend on the elaboration order.
struct BlockedFrontier {
  std::vector<std::string> groups[3];
  const Context* start = nullptr;  // where to look for a wait-for cycle: stuck on a full channel if any
  size_t size() const { return groups[0].size() + groups[1].size() + groups[2].size(); }
};

BlockedFrontier blocked_frontier(const Elaboration& e) {
  BlockedFrontier f;
  for (const auto& [name, op] : e.ops) {  // std::map: sorted by name
    const Context& c = op->ctx();
    if (c.state() == Context::State::kFinished) continue;
    std::string line = "  node '" + name + "' (" + op->config().info->name + ") at cycle " + std::to_string(c.now()) +
                       " " + state_text(c);
    size_t g = 2;
    if (c.state() == Context::State::kBlockedSend) {
      g = 0;
      line += "; consumer '" + c.blocked_on()->consumer()->name() + "' does not dequeue";
    } else if (c.state() == Context::State::kBlockedRecv) {
      const Context* p = c.blocked_on()->producer();
      const bool stuck = p->state() != Context::State::kFinished;
      g = stuck ? 1 : 2;
      line += stuck ? "; producer '" + p->name() + "' is blocked too" : "; producer '" + p->name() + "' has finished";
    }
    if (g < 2 && (!f.start || (g == 0 && f.start->state() != Context::State::kBlockedSend))) f.start = &c;
    f.groups[g].push_back(std::move(line));
  }
  return f;
}

// Follows the "waits for" edges from `start` (full channel -> its consumer, empty channel -> its
// producer): "\n  wait-for cycle: 'a' -(full)-> 'b' -(empty)-> 'a'", or "" when they end.
std::string wait_for_cycle(const Context* start) {
  std::vector<const Context*> path;
  const Context* c = start;
  while (c && std::find(path.begin(), path.end(), c) == path.end()) {
    path.push_back(c);
    if (c->state() == Context::State::kBlockedSend)
      c = c->blocked_on()->consumer();
    else if (c->state() == Context::State::kBlockedRecv)
      c = c->blocked_on()->producer();
    else
      c = nullptr;
  }
  if (!c) return "";
  std::string cyc;
  auto it = std::find(path.begin(), path.end(), c);
  const size_t len = size_t(path.end() - it);
  for (size_t k = 0; it != path.end(); ++it, ++k) {
    if (k == 8 && len > 10) {  // a long cycle: its start and its end
      cyc += "... (" + std::to_string(len - 9) + " more) -> ";
      it = path.end() - 1;
    }
    cyc += "'" + (*it)->name() + "' " + ((*it)->state() == Context::State::kBlockedSend ? "-(full)-> " : "-(empty)-> ");
  }
  return "\n  wait-for cycle: " + cyc + "'" + c->name() + "'";
}

std::string deadlock_report(const Elaboration& e) {
  constexpr size_t kMaxLines = 20;  // operators listed at most
  const BlockedFrontier f = blocked_frontier(e);
  std::string msg = "deadlock: no operator can make progress; " + std::to_string(f.size()) + " of " +
                    std::to_string(e.ops.size()) + " operators are blocked.";
  if (f.start) msg += wait_for_cycle(f.start);
  size_t listed = 0;
  for (const auto& grp : f.groups)
    for (const std::string& line : grp)
      if (listed < kMaxLines) {
        msg += "\n" + line;
        ++listed;
      }
  if (f.size() > listed) msg += "\n  ... and " + std::to_string(f.size() - listed) + " more blocked operators";
  return msg;
}

}  // namespace

std::string diagnose_run(const Elaboration& e) {
  const std::string failure = first_failure(e);
  if (!failure.empty()) return failure;
  for (const auto& [name, op] : e.ops)
    if (op->ctx().state() != Context::State::kFinished) return deadlock_report(e);
  return "";
}

std::string fabric_excess(const SimResult& r, const HardwareParams& hw) {
  std::string why;
  if (r.compute_units > hw.num_pcus)
    why = std::to_string(r.compute_units) + " compute units > " + std::to_string(hw.num_pcus);
  if (r.memory_units > hw.num_pmus)
    why +=
        (why.empty() ? "" : ", ") + std::to_string(r.memory_units) + " memory units > " + std::to_string(hw.num_pmus);
  return why;
}

}  // namespace stepsim
