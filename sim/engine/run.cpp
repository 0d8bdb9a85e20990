#include "sim/engine/run.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <systemc>

namespace stepsim {

namespace {

// Calls SimOptions::progress from a thread of its own while the kernel runs, so that the run
// loop (hw/channel/context.cpp) has nothing to check. It reads the operators' clocks without
// synchronisation: a clock is one aligned 64-bit word (never torn on the hosts we build for),
// the vector of contexts does not change during the run, and a stale value only makes the
// display lag by a moment.
class ProgressWatch {
 public:
  ProgressWatch(const SimOptions& options, const Scheduler& scheduler) {
    if (options.progress) thread_ = std::thread([this, &options, &scheduler] { watch(options, scheduler); });
  }
  ~ProgressWatch() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }

 private:
  void watch(const SimOptions& options, const Scheduler& scheduler) {
    const auto start = std::chrono::steady_clock::now();
    const auto interval = std::chrono::duration<double>(options.progress_interval);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, interval, [this] { return stop_; })) {
      SimProgress p;
      for (const Context* c : scheduler.contexts()) p.cycles = std::max(p.cycles, c->now());
      p.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      options.progress(p);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

void run_elaboration(Elaboration& e, const SimOptions& options) {
  e.ran = true;  // from now on fibers may be left suspended (Elaboration's destructor)
  ProgressWatch watch(options, *e.scheduler);
  sc_core::sc_start();
}

}  // namespace stepsim
