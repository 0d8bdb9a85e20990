// TLM-2.0 loosely-timed target for the off-chip memory (HBM).
//
// Model time is cycles carried in the transaction (HbmBurstExtension), not SystemC time:
// the initiator states the cycle its first request is issued, the target runs the timing
// model (an HbmModel, hw/memory/hbm_model.h, made by name) and returns the completion cycle
// in the extension. It also annotates b_transport's delay with (completion - issue) *
// clock_period, for initiators that do keep SystemC time. The target never calls wait(), so
// b_transport may be called from any process or from plain C++ after elaboration.
//
// Transactions (tlm_generic_payload + HbmBurstExtension):
//   kind Burst   (fast mode, one transaction per tile): address = base of row 0; geometry
//                rows/row_bytes/row_pitch/par_dispatch in the extension -> serve_burst
//                (immediate: later bursts cannot delay it).
//   kind Request (request mode, one transaction per request): address = request address;
//                exactly one request of request_bytes -> serve_request.
//   kind BurstIssue  (deferred fast mode, exact): like Burst (data moves now) but runs
//                issue_burst; returns `handle` and last_issue_cycle, no completion, no delay.
//   kind BurstResult (deferred fast mode): no address/data; `handle` and `watermark` in ->
//                try_result; `ready` out, and if ready completion_cycle / requests /
//                last_issue_cycle. No delay annotation. See HbmModel::try_result for the
//                watermark's promise.
//   `initiator` (Burst, Request, BurstIssue) sets the same-cycle order (Burst::initiator).
//   no extension: a contiguous burst of data_length bytes (one row, par_dispatch =
//                channels) issued at the model's time-order watermark (the latest issue
//                cycle seen); meant for generic initiators, not for timing studies.
// Data convention: a null data pointer or a zero data_length makes the transaction
// timing-only (no bytes move). Otherwise the data buffer holds the bytes packed row after
// row: Burst -> exactly rows*row_bytes bytes (row r is stored at address + r*row_pitch);
// Request -> 1..request_bytes bytes at address. Other lengths, byte enables and a
// streaming width below the data length get TLM_BURST_ERROR_RESPONSE /
// TLM_BYTE_ENABLE_ERROR_RESPONSE. transport_dbg moves data with no timing (a Burst
// extension, if present, gives the row geometry). Calls must respect the time-order
// precondition of HbmModel.
#pragma once

#include <memory>

#include <systemc>
#include <tlm>

#include "hw/memory/hbm_model.h"
#include "hw/memory/sparse_memory.h"
#include "hw/presets/hbm_params.h"

namespace stepsim {

class HbmBurstExtension : public tlm::tlm_extension<HbmBurstExtension> {
 public:
  enum class Kind : uint8_t { Burst, Request, BurstIssue, BurstResult };

  // Inputs (set by the initiator).
  Kind kind = Kind::Burst;
  uint64_t issue_cycle = 0;   // cycle the (first) request is issued
  uint32_t rows = 1;          // Burst / BurstIssue
  uint64_t row_bytes = 0;     // Burst / BurstIssue
  uint64_t row_pitch = 0;     // Burst / BurstIssue; 0 means row_bytes
  uint32_t par_dispatch = 1;  // Burst / BurstIssue; requests issued per cycle
  uint32_t initiator = 0;     // same-cycle order (Burst::initiator)
  uint64_t watermark = 0;     // BurstResult
  // Outputs (set by the target).
  uint64_t completion_cycle = 0;  // last response visible at the initiator
  uint64_t requests = 0;
  uint64_t last_issue_cycle = 0;
  uint64_t handle = 0;  // BurstIssue: out; BurstResult: in
  bool ready = false;   // BurstResult: the result is final and was taken

  tlm::tlm_extension_base* clone() const override { return new HbmBurstExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& ext) override { *this = static_cast<const HbmBurstExtension&>(ext); }
};

// The target implements the forward interface itself: one virtual call per transaction, no
// simple_target_socket dispatch in between (two calls per tile in the simulator).
class HbmTarget : public sc_core::sc_module, public tlm::tlm_fw_transport_if<> {
 public:
  tlm::tlm_target_socket<> socket;

  HbmTarget(sc_core::sc_module_name name, const HbmParams& params = HbmParams(),
            sc_core::sc_time clock_period = sc_core::sc_time(1, sc_core::SC_NS));

  const HbmParams& params() const { return model_->params(); }
  sc_core::sc_time clock_period() const { return period_; }
  HbmModel& model() { return *model_; }
  const HbmModel& model() const { return *model_; }
  SparseMemory& memory() { return mem_; }
  const SparseMemory& memory() const { return mem_; }
  // New parameters: a new timing model, params.model by name (make_hbm_model), without state
  // or statistics; keeps the data. An unknown name throws std::invalid_argument (the model in
  // place stays).
  void reconfigure(const HbmParams& params);

 private:
  // tlm_fw_transport_if. nb_transport_fw completes at once (TLM_COMPLETED, the b_transport
  // delay annotated); no DMI.
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) override;
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans) override;
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                     sc_core::sc_time& delay) override;
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) override;

  std::unique_ptr<HbmModel> model_;
  SparseMemory mem_;
  sc_core::sc_time period_;
};

}  // namespace stepsim
