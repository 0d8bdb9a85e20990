#include "hw/channel/context.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>

#include <boost/context/fixedsize_stack.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <fstream>
#if STEPSIM_ASAN_FIBERS
#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <cstring>
#endif

#include "hw/channel/channel.h"

namespace stepsim {

namespace {
uint64_t sat_add(uint64_t a, uint64_t b) { return a >= kNever || b >= kNever ? kNever : a + b; }
}  // namespace

size_t fiber_reservation_bytes() {
  const size_t page = boost::context::stack_traits::page_size();
  return (kFiberStackBytes + page - 1) / page * page + page;  // as protected_fixedsize_stack::allocate
}

namespace {

// Mappings left to the libraries, the heap and the channels' buffers.
constexpr uint64_t kMappingMargin = 8192;
std::atomic<uint64_t> guarded_now{0};

uint64_t budget_from_kernel() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  uint64_t max_maps = 0;
  if (!(f >> max_maps)) max_maps = 65530;  // the kernel's default
  return max_maps > kMappingMargin ? (max_maps - kMappingMargin) / 2 : 0;
}

uint64_t& budget() {
  static uint64_t b = budget_from_kernel();
  return b;
}

}  // namespace

uint64_t guarded_fiber_budget() { return budget(); }
void set_guarded_fiber_budget(uint64_t fibers) { budget() = fibers; }
uint64_t guarded_fibers() { return guarded_now; }

Context::Context(std::string name, Scheduler* scheduler) : scheduler_(scheduler), name_(std::move(name)) {
  index_ = scheduler_->add_context(this);
}

#if !STEPSIM_ASAN_FIBERS
namespace {
// Boost's guarded stack within guarded_fiber_budget(), else its plain one (from the heap).
class BudgetedStack {
 public:
  explicit BudgetedStack(size_t bytes) : guarded_(bytes), plain_(bytes) {}
  boost::context::stack_context allocate() {
    is_guarded_ = guarded_now < guarded_fiber_budget();
    if (!is_guarded_) return plain_.allocate();
    boost::context::stack_context sc = guarded_.allocate();
    ++guarded_now;
    return sc;
  }
  void deallocate(boost::context::stack_context& sc) noexcept {
    if (!is_guarded_) return plain_.deallocate(sc);
    guarded_.deallocate(sc);
    --guarded_now;
  }

 private:
  boost::context::protected_fixedsize_stack guarded_;
  boost::context::fixedsize_stack plain_;
  bool is_guarded_ = false;
};
}  // namespace

void Context::spawn(std::function<void()> body, size_t stack_bytes) {
  Scheduler* s = scheduler_;
  fiber_ = boost::context::fiber(std::allocator_arg, BudgetedStack(stack_bytes),
                                 [s, body = std::move(body)](boost::context::fiber&& from) {
                                   *s->save_slot_ = std::move(from);
                                   body();  // ends with finish() (Op::thread_main)
                                   // Continue with the next runnable context, or with the Scheduler's loop.
                                   Context* next = s->next_fiber();
                                   s->save_slot_ = &s->finished_;
                                   ++s->switches_;
                                   return std::move(next ? next->fiber_ : s->main_);
                                 });
}
#else
// The same fiber, telling AddressSanitizer about each switch (context.h).
namespace {
// Boost's guarded stack, recording where it is for the switch announcements. Its shadow is
// cleared both ways: frames left by an exception or an unwind must not poison the next mapping
// at the same address (this ASan does not clear the shadow on munmap).
class RecordedStack {
 public:
  RecordedStack(size_t bytes, FiberStack* where) : stack_(bytes), where_(where) {}
  boost::context::stack_context allocate() {
    boost::context::stack_context sc = stack_.allocate();
    // sp is the top (stacks grow down); the lowest page is the guard (PROT_NONE), which
    // LeakSanitizer must not scan.
    const size_t guard = boost::context::stack_traits::page_size();
    __asan_unpoison_memory_region(static_cast<char*>(sc.sp) - sc.size, sc.size);
    where_->bottom = static_cast<char*>(sc.sp) - sc.size + guard;
    where_->size = sc.size - guard;
    // A suspended fiber's locals are live: LeakSanitizer scans only thread stacks, so the
    // fiber's stack is a root while it exists (a co-simulation leaves its fibers suspended).
    __lsan_register_root_region(where_->bottom, where_->size);
    return sc;
  }
  void deallocate(boost::context::stack_context& sc) noexcept {
    const size_t guard = boost::context::stack_traits::page_size();
    __lsan_unregister_root_region(static_cast<char*>(sc.sp) - sc.size + guard, sc.size - guard);
    __asan_unpoison_memory_region(static_cast<char*>(sc.sp) - sc.size, sc.size);
    stack_.deallocate(sc);
  }

 private:
  boost::context::protected_fixedsize_stack stack_;
  FiberStack* where_;
};

// While a fiber's body runs: if Boost unwinds it (~Context), the last thing before Boost jumps
// back is to announce that switch (the fiber ends: no fake stack to keep).
class UnwindAnnouncement {
 public:
  explicit UnwindAnnouncement(const FiberStack& destroyer) : destroyer_(destroyer) {}
  ~UnwindAnnouncement() {
    if (armed_) start_switch(nullptr, destroyer_);
  }
  void disarm() { armed_ = false; }

 private:
  const FiberStack& destroyer_;
  bool armed_ = true;
};
}  // namespace

void Context::spawn(std::function<void()> body, size_t stack_bytes) {
  Scheduler* s = scheduler_;
  fiber_ = boost::context::fiber(std::allocator_arg, RecordedStack(stack_bytes, &stack_),
                                 [s, self = this, body = std::move(body)](boost::context::fiber&& from) {
                                   FiberStack came_from;
                                   finish_switch(nullptr, &came_from);
                                   // The Scheduler's loop makes the first switch of a run: its stack is the first one
                                   // left.
                                   if (!s->main_stack_.size) s->main_stack_ = came_from;
                                   self->started_ = true;
                                   *s->save_slot_ = std::move(from);
                                   UnwindAnnouncement unwind(s->unwind_to_);
                                   body();  // ends with finish() (Op::thread_main)
                                   unwind.disarm();
                                   Context* next = s->next_fiber();
                                   s->save_slot_ = &s->finished_;
                                   ++s->switches_;
                                   start_switch(nullptr, next ? next->stack_ : s->main_stack_);
                                   return std::move(next ? next->fiber_ : s->main_);
                                 });
}

// SystemC announces its switch into a thread (sc_cor_pkg_qt::yield) but not the switch out of a
// thread that ends (abort): ASan would go on believing that the OS thread runs on the ended
// thread's coroutine stack (LeakSanitizer then scans it at exit, perhaps unmapped; an exception
// thrown later finds sp outside the stack it knows). The Scheduler's thread, about to end, hands
// ASan the OS thread's own stack back, as if SystemC had not announced anything.
void Scheduler::end_of_thread_for_asan() {
  pthread_attr_t attr;
  void* bottom = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  const bool known = pthread_attr_getstack(&attr, &bottom, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!known) return;
  void* fake_stack = nullptr;
  start_switch(&fake_stack, FiberStack{bottom, size});
  finish_switch(fake_stack);
}

#if !defined(__clang__)
// ASan's idea of the current stack matters at a no-return point (a throw): it unpoisons the
// stack from there up, and with the wrong bounds it skips that ("ASan is ignoring requested
// __asan_handle_no_return") and leaves stale poison that later reads as stack-buffer-overflow
// or stack-use-after-scope. Our switches keep it right, but SystemC 2.3.4's do not always:
// it announces its main coroutine as a null stack, does not announce the end of a thread, and
// after sc_core::wait() in a fiber it announces the thread's coroutine stack. So, in a gcc ASan
// build (a shared libasan this definition can stand in front of), every no-return point first
// tells ASan the stack it is really on: the mapping that holds the stack pointer.
namespace {
FiberStack mapping_containing(const void* p) {
  FiberStack found;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return found;
  char line[256];
  bool line_start = true;
  while (std::fgets(line, sizeof line, maps)) {
    unsigned long lo = 0, hi = 0;
    if (line_start && std::sscanf(line, "%lx-%lx", &lo, &hi) == 2 && uintptr_t(p) >= lo && uintptr_t(p) < hi) {
      found = FiberStack{reinterpret_cast<const void*>(lo), size_t(hi - lo)};
      break;
    }
    line_start = std::strchr(line, '\n') != nullptr;
  }
  std::fclose(maps);
  return found;
}
}  // namespace

extern "C" void __asan_handle_no_return() {
  using Real = void (*)();
  static const Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "__asan_handle_no_return"));
  // (No cache of the last mapping: stacks are freed and their addresses reused with other
  // bounds, and a stale top would leave the catching frames poisoned.)
  if (!switch_pending) {  // (during a switch ASan picks the side by the stack pointer itself)
    const FiberStack here = mapping_containing(__builtin_frame_address(0));
    if (here.size) {
      void* fake_stack = nullptr;
      start_switch(&fake_stack, here);
      finish_switch(fake_stack);
    }
  }
  real();
}
#endif
// Referenced by the link of every program in a sanitizer build (CMakeLists.txt), so that the
// definition above is in programs that use no fiber too.
extern "C" const int stepsim_asan_stacks = 1;

// A fiber still suspended (a deadlock, an operator error that stopped the run) is unwound by
// ~fiber: a switch to its stack and back, announced like the others. A fiber that never ran
// has no code of ours on its stack to announce the way back: this side announces both.
void Context::unwind() {
  if (!fiber_) return;
  void* fake_stack = nullptr;
  start_switch(&fake_stack, stack_);
  const bool announces_return = started_;
  fiber_ = boost::context::fiber();  // runs the unwind on the fiber's stack
  if (announces_return) {
    finish_switch(fake_stack);
  } else {
    FiberStack here;
    finish_switch(fake_stack, &here);  // ASan now believes it is on the fiber
    start_switch(&fake_stack, here);
    finish_switch(fake_stack);
  }
}
#endif

#if !STEPSIM_ASAN_FIBERS
void Context::unwind() { fiber_ = boost::context::fiber(); }
#endif

void Context::suspend() {
  wake_pending_ = false;
  if (scheduler_->deactivate(this)) return;  // the quiescence step woke this context itself
  scheduler_->yield(this);
}

void Context::run_step() {
  state_ = State::kRunnable;
  blocked_on_ = nullptr;
  step_(step_arg_);  // parks or finishes
  if (state_ != State::kFinished && scheduler_->deactivate(this))
    throw std::logic_error("context '" + name_ + "' runs as a step function but asked for quiescence");
}

void Context::block_recv(Channel* c) {
  state_ = State::kBlockedRecv;
  blocked_on_ = c;
  c->set_consumer_waits(true);
  suspend();
  state_ = State::kRunnable;
  blocked_on_ = nullptr;
}

void Context::block_send(Channel* c) {
  state_ = State::kBlockedSend;
  blocked_on_ = c;
  c->set_producer_waits(true);
  suspend();
  state_ = State::kRunnable;
  blocked_on_ = nullptr;
}

// Woken by a send on any input, a dequeue on any output, a quiescence or a turn.
void Context::arb_wait() {
  state_ = State::kArbWait;
  for (Channel* c : inputs_) c->set_consumer_waits(true);
  for (Channel* c : outputs_) c->set_producer_waits(true);
  scheduler_->request_quiescence(this);
  suspend();
  state_ = State::kRunnable;
  for (Channel* c : inputs_) c->set_consumer_waits(false);
  for (Channel* c : outputs_) c->set_producer_waits(false);
}

void Context::finish() {
  state_ = State::kFinished;
  scheduler_->note_progress();
  scheduler_->wake_turn_waiters();
  scheduler_->deactivate(nullptr);
}

int Context::select_earliest(const std::vector<Channel*>& candidates) {
  for (;;) {
    uint64_t best_t = kNever;
    int best = -1;
    bool best_known = false;
    bool walked = false;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const Channel* c = candidates[i];
      uint64_t t;
      bool known;
      if (!c->empty()) {
        t = std::max(now_, c->head_ready_time());
        known = true;
      } else if (c->done_sent()) {
        continue;  // its done beat was consumed: nothing more will come
      } else {
        if (!walked) {
          scheduler_->begin_walk();
          walked = true;
        }
        t = std::max(now_, scheduler_->arrival_lower_bound(c));
        known = false;
      }
      if (t < best_t) {
        best_t = t;
        best = int(i);
        best_known = known;
      }
    }
    if (best < 0 || best_known) return best;
    arb_candidates_ = &candidates;
    arb_wait();
    arb_candidates_ = nullptr;
  }
}

uint64_t Context::await_arrival(Channel* c, uint64_t t) {
  for (;;) {
    if (!c->empty()) return c->head_ready_time();
    if (c->done_sent()) return kNever;
    scheduler_->begin_walk();
    const uint64_t lb = scheduler_->arrival_lower_bound(c);
    if (lb > t) {
      // The caller's clock moves on without a beat moving (as in await_release): progress, so
      // the next quiescence is no deadlock.
      scheduler_->note_progress();
      return lb;
    }
    // No arrival candidates while it waits (unlike select_earliest): the caller may still act
    // at its own clock once it knows nothing arrives by t (a unit's other pins, its memory
    // requests), so its lower bound is its clock, not c's next arrival.
    arb_wait();
  }
}

uint64_t Context::await_release(Channel* c, uint64_t t) {
  for (;;) {
    if (!c->full()) return c->next_slot_free_time();
    scheduler_->begin_walk();
    const uint64_t lb = sat_add(scheduler_->context_lower_bound(c->consumer()), c->params().response_latency);
    if (lb > t) {
      // The caller's clock moves on with the slot still held: progress although no channel
      // moved (callers ask for a later t each time), so the next quiescence is no deadlock.
      scheduler_->note_progress();
      return lb;
    }
    arb_wait();  // woken by the consumer's dequeue (Channel) or at quiescence
  }
}

void Context::wait_for_turn(const std::vector<Context*>& peers) {
  for (;;) {
    bool walked = false;
    bool mine = true;
    Context* ahead = nullptr;  // the peer that goes first, if it waits at its clock (a turn, a bridge's await)
    for (Context* p : peers) {
      if (p == this || p->state_ == State::kFinished) continue;
      // Every lower bound of a context is at least its clock (context_lower_bound): a peer
      // whose clock is already after (now, tie_rank) cannot go first, whatever it waits for.
      if (p->now_ > now_ || (p->now_ == now_ && p->tie_rank_ > tie_rank_)) continue;
      uint64_t lb;
      if (p->state_ == State::kRunnable || (p->state_ == State::kArbWait && !p->arb_candidates_)) {
        lb = p->now_;  // it acts at its own clock (what the walk would find, without one)
      } else {
        if (!walked) {
          scheduler_->begin_walk();
          walked = true;
        }
        lb = scheduler_->context_lower_bound(p);
      }
      if (lb < now_ || (lb == now_ && p->tie_rank() < tie_rank_)) {
        mine = false;
        if (p->state_ == State::kArbWait && !p->arb_candidates_) ahead = p;
        break;
      }
    }
    // A granted turn is progress even though no channel moved (an off-chip client may take
    // several turns in a row), so the next quiescence must not look like a deadlock.
    if (mine) {
      scheduler_->note_progress();
      return;
    }
    // Once per context: with the direct wake below, turns can pass back and forth without a
    // quiescence (which clears the list), and a second entry would only wake it twice.
    std::vector<Context*>& tw = scheduler_->turn_waiters_;
    if (std::find(tw.begin(), tw.end(), this) == tw.end()) tw.push_back(this);
    // A peer that goes first and waits at its own clock (for a turn, or a bridge in
    // await_arrival / await_release) re-checks now instead of at the next quiescence (which
    // this context's blocking would otherwise cause): its check is its whole guard, so an
    // early re-check cannot grant anything it would not.
    if (ahead) ahead->wake();
    arb_wait();
  }
}

Scheduler::Scheduler(sc_core::sc_module_name name) : sc_core::sc_module(name) { SC_THREAD(main); }

void Scheduler::main() {
  runnable_.assign(contexts_.size(), nullptr);
  top_ = 0;
  // Every context starts runnable, the last created on top (in a chain built from the source
  // on, the consumers block first and the source's beats then go down the chain depth first).
  for (Context* c : contexts_) push(c);
  while (Context* c = next_fiber()) {
    switching_to(c);
    switch_to(&main_, c->fiber_);
  }
  // Empty stack: every context finished or is blocked (a deadlock), or stop().
#if STEPSIM_ASAN_FIBERS
  end_of_thread_for_asan();
#endif
}

Context* Scheduler::next_fiber() {
  for (;;) {
    Context* c = stop_ ? nullptr : pop();
    if (!c || !c->step_) return c;
    c->run_step();
  }
}

void Scheduler::yield(Context* self) {
  Context* next = next_fiber();
  if (next == self) return;  // a stepped context run meanwhile woke it: no switch
  switching_to(next);
  switch_to(&self->fiber_, next ? next->fiber_ : main_);
}

int Scheduler::add_context(Context* c) {
  contexts_.push_back(c);
  memo_value_.push_back(0);
  memo_walk_.push_back(0);
  path_walk_.push_back(0);
  ++active_;  // its thread starts runnable
  return int(contexts_.size()) - 1;
}

void Scheduler::request_quiescence(Context* c) {
  if (!c->queued_for_quiescence_) {
    c->queued_for_quiescence_ = true;
    waiters_.push_back(c);
  }
  // The step itself runs when the last active context blocks (deactivate).
}

// wake() only queues (the woken contexts run after the caller blocks), so the lists cannot
// change while they are walked; the scratch vector keeps its capacity (no allocation per wake).
void Scheduler::wake_turn_waiters() {
  if (turn_waiters_.empty()) return;
  scratch_.swap(turn_waiters_);
  for (Context* c : scratch_) c->wake();
  scratch_.clear();
}

bool Scheduler::quiesce(Context* caller) {
  scratch_.swap(waiters_);
  turn_waiters_.clear();
  for (Context* c : scratch_) c->queued_for_quiescence_ = false;
  if (progress_ == progress_at_last_quiescence_) {
    stalled_ = true;  // nobody moved since the last wake-up: leave them blocked, report deadlock
    scratch_.clear();
    return false;
  }
  progress_at_last_quiescence_ = progress_;
  bool caller_woken = false;
  for (Context* c : scratch_) {
    if (c == caller) {
      caller_woken = true;  // running: it simply does not suspend (no self-notification)
      ++active_;
    } else {
      c->wake();
    }
  }
  scratch_.clear();
  return caller_woken;
}

void Scheduler::begin_walk() { ++walk_; }

uint64_t Scheduler::context_lower_bound(const Context* c) {
  if (c->state_ == Context::State::kFinished) return kNever;
  size_t i = size_t(c->index_);
  if (memo_walk_[i] == walk_) return memo_value_[i];
  if (path_walk_[i] == walk_) return c->now_;  // a cycle: the context's own clock still bounds it
  path_walk_[i] = walk_;
  uint64_t v = c->now_;
  switch (c->state_) {
    case Context::State::kBlockedRecv:
      v = std::max(v, arrival_lower_bound(c->blocked_on_));
      break;
    case Context::State::kBlockedSend: {
      const Channel* ch = c->blocked_on_;
      if (!ch->full())
        v = std::max(v, ch->next_slot_free_time());
      else
        v = std::max(v, sat_add(context_lower_bound(ch->consumer()), ch->params().response_latency));
      break;
    }
    case Context::State::kArbWait:
      // An arrival-order decision cannot act before one of its candidates delivers.
      if (c->arb_candidates_) {
        uint64_t m = kNever;
        for (const Channel* ch : *c->arb_candidates_)
          m = std::min(m, ch->empty() ? arrival_lower_bound(ch) : ch->head_ready_time());
        v = std::max(v, m);
      }
      break;
    default:
      break;
  }
  path_walk_[i] = 0;
  memo_walk_[i] = walk_;
  memo_value_[i] = v;
  return v;
}

uint64_t Scheduler::arrival_lower_bound(const Channel* c) {
  if (!c->empty()) return c->head_ready_time();
  if (c->done_sent()) return kNever;
  return sat_add(context_lower_bound(c->producer()), c->params().send_latency);
}

}  // namespace stepsim
