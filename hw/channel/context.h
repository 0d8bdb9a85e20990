// Context: the execution state of one operator — its local clock, what it is blocked on, and
// the conservative synchronisation that keeps results independent of SystemC process order.
//
// Most operators only block on one channel at a time (Kahn semantics, deterministic by
// construction). Operators whose behaviour depends on arrival order (EagerMerge, Reassemble)
// and the shared off-chip memory need to know that nothing earlier can still arrive. They ask
// for a lower bound on the next action time of the contexts upstream (`lower_bound`), a walk
// over blocked contexts in the style of Chandy–Misra–Bryant with positive channel latency as
// lookahead. When the bound is not yet enough they wait for new data or for quiescence (every
// process blocked), when the bound is the tightest it can get; the Scheduler then wakes them.
// Quiescence is detected by counting the contexts that are not blocked: the last one to block
// runs the Scheduler's quiescence step before it suspends (no SystemC event or time step).
//
// Execution (docs/performance.md, "Execution engine"): every context's body runs as a stackful
// fiber (Boost.Context), not as a SystemC thread of its own. The Scheduler owns one SystemC
// thread that runs the fibers from a run stack: suspend() switches directly to the next
// runnable fiber (to the Scheduler's loop when none is left), wake() pushes onto the stack.
// SystemC stays the kernel of time and of the co-simulated units: a fiber may call
// sc_core::wait(), which suspends the Scheduler's thread (and so every fiber) until SystemC
// resumes it, in the same fiber. An operator written as a step function (set_step, StepOp in
// hw/ops/op.h) has no fiber: taken from the run stack, it runs as a plain call on the stack of
// whoever is switching, parks in the same blocked states and returns.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <boost/context/fiber.hpp>
#include <systemc>

// AddressSanitizer keeps one stack per thread. Told nothing, it takes a fiber's stack for
// foreign memory: an exception thrown in an operator fiber then leaves the fiber's frames
// poisoned (stack-use-after-scope / stack-buffer-overflow reports later). So, in an ASan build
// only, every switch announces the stack it goes to (__sanitizer_start_switch_fiber) and every
// resumed side confirms it (__sanitizer_finish_switch_fiber); see the Scheduler and
// docs/checking.md. Boost.Context's own BOOST_USE_ASAN support is no option here: it exists
// only for its ucontext back end, which Debian's libboost_context does not build (it has the
// fcontext assembly only) and which keeps a thread-global "current fiber" that the SystemC
// threads (one OS thread, QuickThreads switching) would share. SystemC itself annotates its
// own coroutine switches (libsystemc calls the same hooks when they are present).
#if defined(__SANITIZE_ADDRESS__)
#define STEPSIM_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STEPSIM_ASAN_FIBERS 1
#endif
#endif
#if STEPSIM_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#endif

namespace stepsim {

class Channel;
class Scheduler;

#if STEPSIM_ASAN_FIBERS
// The bounds of a stack, as the sanitizer hooks take them (bottom = lowest address).
struct FiberStack {
  const void* bottom = nullptr;
  size_t size = 0;
};
// The two halves of an announced switch. `switch_pending` is true between them (on this OS
// thread: the fibers and SystemC's coroutines all share it), when ASan must not be told
// anything else (context.cpp, __asan_handle_no_return).
inline thread_local bool switch_pending = false;
inline void start_switch(void** fake_stack, const FiberStack& to) {
  switch_pending = true;
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
}
inline void finish_switch(void* fake_stack, FiberStack* from = nullptr) {
  __sanitizer_finish_switch_fiber(fake_stack, from ? &from->bottom : nullptr, from ? &from->size : nullptr);
  switch_pending = false;
}
#endif

constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max() / 4;

// The stack of an operator's fiber (Op, hw/ops/op.cpp): operators keep little on their stacks,
// and thousands of them exist.
constexpr size_t kFiberStackBytes = 0x10000;
// What spawn() reserves for a stack of kFiberStackBytes: the stack and a guard page (counted by
// the host-memory estimate, sim/graph/host_limits.h).
size_t fiber_reservation_bytes();
// A fiber's stack has a guard page below it (an overflow faults there instead of writing over
// other memory) while the kernel has memory mappings to spare: a guarded stack is two mappings,
// and a process may have vm.max_map_count of them (65530 by default), which 10^5 operators
// exceed. Past the budget, half of what that leaves beyond a margin for the libraries and the
// heap, a stack comes from the heap without a guard (Boost's guarded stack would fail there, or
// silently lose its guard when the kernel refuses to split the mapping). Not in ASan builds.
uint64_t guarded_fiber_budget();
void set_guarded_fiber_budget(uint64_t fibers);  // for tests
uint64_t guarded_fibers();                       // guarded stacks alive now

class alignas(64) Context {
 public:
  enum class State : uint8_t { kRunnable, kBlockedRecv, kBlockedSend, kArbWait, kFinished };

  Context(std::string name, Scheduler* scheduler);
#if STEPSIM_ASAN_FIBERS
  ~Context() { unwind(); }
#endif
  // Ends a fiber still suspended (a deadlock, an operator error that stopped the run): its
  // stack is unwound, running the destructors of the body's locals. Call it while the
  // operator's members still exist (Scheduler::unwind_suspended); ~Context does it otherwise.
  void unwind();

  const std::string& name() const { return name_; }
  uint64_t now() const { return now_; }
  State state() const { return state_; }
  Channel* blocked_on() const { return blocked_on_; }
  Scheduler* scheduler() const { return scheduler_; }
  int index() const { return index_; }

  // Advance the local clock.
  void advance_to(uint64_t t) {
    if (t > now_) now_ = t;
  }
  void incr(uint64_t cycles) {
    now_ += cycles;
    busy_cycles_ += cycles;
  }
  uint64_t busy_cycles() const { return busy_cycles_; }
  void add_busy(uint64_t c) { busy_cycles_ += c; }
  // Firings of the operator (its timeline entries, Op::charge): kept here, in the line every
  // activation reads anyway.
  uint64_t firings() const { return firings_; }
  void count_firing() { ++firings_; }

  void add_input(Channel* c) { inputs_.push_back(c); }
  void add_output(Channel* c) { outputs_.push_back(c); }
  const std::vector<Channel*>& inputs() const { return inputs_; }
  const std::vector<Channel*>& outputs() const { return outputs_; }

  // Among `candidates` (channels this context consumes), returns the position of the one whose
  // head beat is available first in model time (max(now, visible time)), ties broken by the
  // lowest position. Blocks until that is certain. Returns -1 if every candidate is empty and
  // will never deliver (done already sent and consumed).
  int select_earliest(const std::vector<Channel*>& candidates);

  // Blocks until channel `c` (which this context consumes) holds a beat, or it is certain that
  // no beat becomes visible on it at or before model time `t`. Returns the lower bound on its
  // next arrival: the head's visible time when a beat is there, kNever after its done beat was
  // consumed, otherwise a bound > t. Used by the co-simulation bridges (hw/bridge): while it
  // waits, the context's own lower bound is its clock (it may act at now() on other ports).
  uint64_t await_arrival(Channel* c, uint64_t t);
  // The producer's side of the same: blocks until channel `c` (which this context produces) has
  // a free slot, or it is certain that its consumer frees none at or before model time `t`.
  // Returns the next slot's release time when one is free, otherwise a bound > t on it. A
  // clocked unit (hw/bridge) keeps running with its output held instead of stopping.
  uint64_t await_release(Channel* c, uint64_t t);

  // Blocks until no other context in `peers` can act before (now, tie_rank) — the conservative
  // grant used to serialise off-chip memory requests in model-time order.
  void wait_for_turn(const std::vector<Context*>& peers);

  void finish();

  // Used by Channel.
  void block_recv(Channel* c);
  void block_send(Channel* c);
  // Makes the context runnable if it is blocked (pushes it onto the run stack). A context that
  // is running, or that an earlier wake already queued, is left alone: at most one entry per
  // wait.
  inline void wake();

  // The context's body: runs as a fiber with a stack of `stack_bytes` (plus a guard page) once
  // the simulation starts. Call once, during elaboration.
  void spawn(std::function<void()> body, size_t stack_bytes);
  // Or, for an operator written as a step function: no fiber. Whenever the context is taken
  // from the run stack, the Scheduler calls `step(arg)` on its own stack (inside the yield of
  // the context that blocked, or its loop). The step runs until it cannot go on without
  // blocking, then parks (park_recv / park_send: the same states as a blocked fiber, so lower
  // bounds, wakes and the deadlock report see no difference) and returns, or it finishes the
  // context. Saves the fiber switch of every activation (docs/performance.md).
  void set_step(void (*step)(void*), void* arg) {
    step_ = step;
    step_arg_ = arg;
  }
  inline void park_recv(Channel* c);  // (channel.h)
  inline void park_send(Channel* c);

  void set_index(int i) { index_ = i; }
  // Tie-break among off-chip clients acting in the same cycle (wait_for_turn): lower first.
  // Set from the node's position in the graph, so it is independent of elaboration order.
  int tie_rank() const { return tie_rank_; }
  void set_tie_rank(int r) { tie_rank_ = r; }

 private:
  friend class Scheduler;
  void arb_wait();
  void suspend();  // waits for wake()
  void park(State s, Channel* c) {
    state_ = s;
    blocked_on_ = c;
    wake_pending_ = false;
  }
  void run_step();  // the Scheduler runs a stepped context taken from the run stack

  // Hot: what an activation, a wake and every channel operation read, in the first cache line
  // (the class is line-aligned; docs/performance.md).
  Scheduler* scheduler_;
  uint64_t now_ = 0;
  uint64_t busy_cycles_ = 0;
  void (*step_)(void*) = nullptr;  // set_step: runs without a fiber
  void* step_arg_ = nullptr;
  Channel* blocked_on_ = nullptr;
  uint64_t firings_ = 0;
  State state_ = State::kRunnable;
  bool wake_pending_ = false;  // queued to run since the current wait began
  // Cold.
  bool queued_for_quiescence_ = false;
  int index_ = -1;
  int tie_rank_ = 0;
  std::string name_;
  std::vector<Channel*> inputs_;
  std::vector<Channel*> outputs_;
  // While select_earliest waits: its candidates (its next action needs one of them).
  const std::vector<Channel*>* arb_candidates_ = nullptr;
  boost::context::fiber fiber_;  // the suspended body (empty while it runs, or once finished)
#if STEPSIM_ASAN_FIBERS
  FiberStack stack_;      // the fiber's stack (spawn)
  bool started_ = false;  // its body ran (it announces its own switches from then on)
#endif
};

// Runs the contexts of one simulation (their fibers, from a run stack inside one SystemC
// thread) and owns the quiescence detection they share. "Every process is blocked" is "no
// context is active": active_ counts the contexts that are running or runnable (created, or
// woken and not yet blocked again), i.e. the running one plus the run stack.
//
// Run order: a stack. The contexts start in reverse creation order; then the context woken
// last runs first; a context runs until it blocks or finishes. Last in, first out because the
// context woken last is usually the consumer of the beat just sent, whose channel is still in
// the cache (docs/performance.md). The order is deterministic (results do not depend on it
// anyway: blocking channels and the conservative decisions above).
class Scheduler : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Scheduler);
  explicit Scheduler(sc_core::sc_module_name name);

  int add_context(Context* c);
  const std::vector<Context*>& contexts() const { return contexts_; }

  // A context could not decide yet: wake it at the next quiescence.
  void request_quiescence(Context* c);
  void note_progress() { ++progress_; }
  // Wake every context waiting in wait_for_turn (a peer made progress).
  void wake_turn_waiters();
  void add_turn_waiter(Context* c) { turn_waiters_.push_back(c); }

  // Set when a quiescence found nothing able to move: the graph is deadlocked.
  bool stalled() const { return stalled_; }
  // Ends the run after the current context blocks or finishes (an operator error): nothing
  // else runs.
  void stop() { stop_ = true; }
  // After the run: unwinds every fiber still suspended (Context::unwind), before the operators
  // that own the contexts are destroyed.
  void unwind_suspended() {
    for (Context* c : contexts_) c->unwind();
  }
  // Context switches made (fiber resumes), for the benchmarks.
  uint64_t switches() const { return switches_; }

  // Lower bounds (one walk per query; memoised within the walk):
  // the model time of a context's next send/dequeue/request, and of the next beat visible on
  // a channel.
  void begin_walk();
  uint64_t context_lower_bound(const Context* c);
  uint64_t arrival_lower_bound(const Channel* c);

 private:
  friend class Context;
  // The quiescence step, run by the last context to block (`caller`, null when it finished):
  // wakes every context that asked for it, unless nothing moved since the previous step (then
  // the graph is deadlocked: stalled_, and nobody is woken). Returns true if `caller` itself
  // asked: it must not suspend.
  bool quiesce(Context* caller);
  // A context stopped being active (it blocks or finishes).
  bool deactivate(Context* c) { return --active_ == 0 && !waiters_.empty() && quiesce(c); }

  // The SystemC thread: runs the fibers until none is runnable (or stop()).
  void main();
  // The next context to switch to: pops the run stack, running stepped contexts on the way
  // (they need no switch). Null when the stack is empty (or stop()).
  Context* next_fiber();
  // The running context `self` blocks: switch to the next runnable fiber, or back to main().
  // Returns when `self` is resumed.
  void yield(Context* self);
  void push(Context* c) { runnable_[top_++] = c; }
  // For ASan only (no code otherwise): the next switch_to goes to `next`'s fiber, or to the
  // Scheduler's loop when `next` is null.
  void switching_to([[maybe_unused]] Context* next) {
#if STEPSIM_ASAN_FIBERS
    switch_target_ = next ? next->stack_ : main_stack_;
#endif
  }
  Context* pop() { return top_ ? runnable_[--top_] : nullptr; }
  // Switches from the current fiber (kept in *save) to `target`; returns when resumed.
  void switch_to(boost::context::fiber* save, boost::context::fiber& target) {
    ++switches_;
    save_slot_ = save;
#if STEPSIM_ASAN_FIBERS
    AsanSwitch announced(this, switch_target_);
#endif
    boost::context::fiber from = std::move(target).resume();
#if STEPSIM_ASAN_FIBERS
    announced.arrived();
#endif
    *save_slot_ = std::move(from);  // the fiber that resumed this one
  }
#if STEPSIM_ASAN_FIBERS
  // One switch away from the current stack: announced on construction, confirmed by arrived()
  // when this side is resumed. Destroyed without arrived(), the switch ended in Boost's forced
  // unwind of this fiber (~Context): the stack is the fiber's now, and the unwind ends with a
  // switch back to the destroyer, whose stack is kept in unwind_to_.
  class AsanSwitch {
   public:
    AsanSwitch(Scheduler* s, const FiberStack& to) : scheduler_(s) { start_switch(&fake_stack_, to); }
    void arrived() {
      finish_switch(fake_stack_);
      arrived_ = true;
    }
    ~AsanSwitch() {
      if (!arrived_) finish_switch(fake_stack_, &scheduler_->unwind_to_);
    }

   private:
    Scheduler* scheduler_;
    void* fake_stack_ = nullptr;
    bool arrived_ = false;
  };
  void end_of_thread_for_asan();  // (context.cpp)
  FiberStack switch_target_;      // the stack the next switch_to goes to (switching_to)
  FiberStack main_stack_;         // the Scheduler thread's stack, learned at the first switch from it
  FiberStack unwind_to_;          // the stack of the ~Context unwinding a suspended fiber
#endif

  // Run stack: runnable_[0, top_) (each context is on it at most once: one slot per context).
  std::vector<Context*> runnable_;
  size_t top_ = 0;
  boost::context::fiber main_;  // the Scheduler thread's loop, while a fiber runs
  // Where the fiber that control leaves is kept: set by the switching side, used by the side
  // that is resumed (it stores the continuation it received there).
  boost::context::fiber* save_slot_ = nullptr;
  boost::context::fiber finished_;  // slot for the (empty) continuation of a finished fiber
  bool stop_ = false;
  uint64_t switches_ = 0;

  std::vector<uint64_t> memo_value_;
  std::vector<uint64_t> memo_walk_;
  std::vector<uint64_t> path_walk_;
  uint64_t walk_ = 0;

  std::vector<Context*> contexts_;
  std::vector<Context*> waiters_;
  std::vector<Context*> turn_waiters_;
  std::vector<Context*> scratch_;  // the list being woken
  uint64_t active_ = 0;            // contexts running or runnable
  uint64_t progress_ = 0;
  uint64_t progress_at_last_quiescence_ = ~uint64_t(0);
  bool stalled_ = false;
};

inline void Context::wake() {
  if (!wake_pending_ && state_ != State::kRunnable && state_ != State::kFinished) {
    wake_pending_ = true;
    ++scheduler_->active_;
    scheduler_->push(this);
  }
}

}  // namespace stepsim
