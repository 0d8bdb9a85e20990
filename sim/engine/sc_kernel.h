// The SystemC kernel of one simulation, and what may outlive it. The one place that creates,
// deletes or leaves behind a kernel (simulate(), and the tests that elaborate modules themselves).
#pragma once

#include <memory>
#include <vector>

namespace sc_core {
class sc_simcontext;
}

namespace stepsim {

// A fresh SystemC kernel, made current for as long as the object lives: every simulation runs in
// its own (a stopped kernel cannot run again). Its INFO reports (e.g. "Simulation stopped by
// user" after an operator error) are silenced. The destructor deletes the kernel, unless it was
// left behind (leave_behind()); every module of the kernel must be gone by then.
class ScKernel {
 public:
  ScKernel();
  ~ScKernel();
  ScKernel(const ScKernel&) = delete;
  ScKernel& operator=(const ScKernel&) = delete;

  // A clocked unit's SystemC thread never ends, and no destructor may run under a suspended
  // thread: such a kernel is never deleted, and neither is anything handed to keep().
  void leave_behind() { left_behind_ = true; }
  bool left_behind() const { return left_behind_; }
  // Keeps `object` (a module of this kernel, or what modules point to) alive and reachable
  // forever, so that a leak checker does not take it for a leak. Only after leave_behind().
  template <class T>
  void keep(std::unique_ptr<T> object) {
    keep_forever(object.release());
  }

  // For test benches whose unit threads never finish: a fresh kernel, current until the next,
  // that is never deleted.
  static void fresh_forever();

 private:
  static void keep_forever(const void* object);

  sc_core::sc_simcontext* context_;
  bool left_behind_ = false;
};

}  // namespace stepsim
