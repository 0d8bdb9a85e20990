#include "hw/memory/hbm_initiator.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "hw/memory/hbm_target.h"

namespace stepsim {

const char* hbm_access_mode_name(HbmAccessMode m) { return m == HbmAccessMode::Fast ? "fast" : "request"; }

HbmAccessMode parse_hbm_access_mode(const std::string& s) {
  if (s == "fast") return HbmAccessMode::Fast;
  if (s == "request") return HbmAccessMode::Request;
  throw std::invalid_argument("unknown HBM access mode '" + s + "' (expected fast or request)");
}

namespace {

// Owns a payload whose extension lives on the stack; detaches it before destruction.
struct Txn {
  tlm::tlm_generic_payload gp;
  HbmBurstExtension ext;
  Txn() { gp.set_extension(&ext); }
  ~Txn() { gp.clear_extension(&ext); }

  void prepare(uint64_t addr, bool write, uint8_t* data, uint64_t len) {
    gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(static_cast<unsigned int>(data ? len : 0));
    gp.set_streaming_width(static_cast<unsigned int>(data ? len : 0));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  }
  void send(tlm::tlm_fw_transport_if<>& fw) {
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    fw.b_transport(gp, delay);
    if (gp.is_response_error())
      throw std::runtime_error("HBM transaction at 0x" + std::to_string(gp.get_address()) +
                               " failed: " + gp.get_response_string());
  }
};

// The transaction objects of the helpers below, reused from call to call (per thread):
// constructing a tlm_generic_payload allocates its extension array, a malloc/free pair per
// transaction. A call made while another one is still inside b_transport (a target or
// interconnect that yields, letting another process call in) gets a fresh one.
class TxnLease {
 public:
  TxnLease() {
    static thread_local Txn cached;
    static thread_local bool busy = false;
    if (busy) {
      own_.reset(new Txn);
      t_ = own_.get();
    } else {
      busy = true;
      busy_ = &busy;
      t_ = &cached;
      t_->ext = HbmBurstExtension();  // no fields left over from the previous call
    }
  }
  ~TxnLease() {
    if (busy_) *busy_ = false;
  }
  TxnLease(const TxnLease&) = delete;
  TxnLease& operator=(const TxnLease&) = delete;
  Txn* operator->() { return t_; }

 private:
  Txn* t_ = nullptr;
  bool* busy_ = nullptr;
  std::unique_ptr<Txn> own_;
};

}  // namespace

uint64_t hbm_request(tlm::tlm_fw_transport_if<>& fw, uint64_t addr, bool write, uint64_t issue_cycle, uint8_t* data,
                     uint32_t len, uint32_t initiator) {
  TxnLease t;
  t->prepare(addr, write, data, len);
  t->ext.kind = HbmBurstExtension::Kind::Request;
  t->ext.issue_cycle = issue_cycle;
  t->ext.initiator = initiator;
  t->send(fw);
  return t->ext.completion_cycle;
}

namespace {
void set_geometry(HbmBurstExtension& e, const Burst& b) {
  e.issue_cycle = b.issue_cycle;
  e.rows = b.rows;
  e.row_bytes = b.row_bytes;
  e.row_pitch = b.row_pitch;
  e.par_dispatch = b.par_dispatch;
  e.initiator = b.initiator;
}
}  // namespace

uint64_t hbm_issue(tlm::tlm_fw_transport_if<>& fw, const Burst& b, uint32_t request_bytes, uint8_t* data,
                   BurstResult* info) {
  TxnLease t;
  t->prepare(b.base, b.write, data, uint64_t(b.rows) * b.row_bytes);
  t->ext.kind = HbmBurstExtension::Kind::BurstIssue;
  set_geometry(t->ext, b);
  t->send(fw);
  if (info) {
    info->completion_cycle = b.issue_cycle;
    info->requests = t->ext.requests;
    info->bytes = t->ext.requests * request_bytes;
    info->last_issue_cycle = t->ext.last_issue_cycle;
  }
  return t->ext.handle;
}

bool hbm_result(tlm::tlm_fw_transport_if<>& fw, uint64_t handle, uint64_t watermark, uint32_t request_bytes,
                BurstResult* out) {
  TxnLease t;
  t->prepare(0, false, nullptr, 0);
  t->ext.kind = HbmBurstExtension::Kind::BurstResult;
  t->ext.handle = handle;
  t->ext.watermark = watermark;
  t->send(fw);
  if (!t->ext.ready) return false;
  if (out) {
    out->completion_cycle = t->ext.completion_cycle;
    out->requests = t->ext.requests;
    out->last_issue_cycle = t->ext.last_issue_cycle;
    out->bytes = t->ext.requests * request_bytes;
  }
  return true;
}

HbmTilePort::HbmTilePort(uint32_t request_bytes) : request_bytes_(request_bytes) {
  gp_.set_byte_enable_ptr(nullptr);
  gp_.set_byte_enable_length(0);
  gp_.set_dmi_allowed(false);
  gp_.set_extension(&ext_);
}

HbmTilePort::~HbmTilePort() { gp_.clear_extension(&ext_); }

void HbmTilePort::send(tlm::tlm_fw_transport_if<>& fw) {
  gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  fw.b_transport(gp_, delay);
  if (gp_.is_response_error())
    throw std::runtime_error("HBM transaction at 0x" + std::to_string(gp_.get_address()) +
                             " failed: " + gp_.get_response_string());
}

void HbmTilePort::prepare(const Burst& b, uint8_t* data) {
  const uint64_t len = uint64_t(b.rows) * b.row_bytes;
  gp_.set_command(b.write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  gp_.set_address(b.base);
  gp_.set_data_ptr(data);
  gp_.set_data_length(static_cast<unsigned int>(data ? len : 0));
  gp_.set_streaming_width(static_cast<unsigned int>(data ? len : 0));
  set_geometry(ext_, b);
}

uint64_t HbmTilePort::issue(tlm::tlm_fw_transport_if<>& fw, const Burst& b, uint8_t* data, BurstResult* info) {
  prepare(b, data);
  ext_.kind = HbmBurstExtension::Kind::BurstIssue;
  send(fw);
  if (info) {
    info->completion_cycle = b.issue_cycle;
    info->requests = ext_.requests;
    info->bytes = ext_.requests * request_bytes_;
    info->last_issue_cycle = ext_.last_issue_cycle;
  }
  return ext_.handle;
}

bool HbmTilePort::result(tlm::tlm_fw_transport_if<>& fw, uint64_t handle, uint64_t watermark, BurstResult* out) {
  gp_.set_command(tlm::TLM_READ_COMMAND);
  gp_.set_address(0);
  gp_.set_data_ptr(nullptr);
  gp_.set_data_length(0);
  gp_.set_streaming_width(0);
  ext_.kind = HbmBurstExtension::Kind::BurstResult;
  ext_.handle = handle;
  ext_.watermark = watermark;
  send(fw);
  if (!ext_.ready) return false;
  if (out) {
    out->completion_cycle = ext_.completion_cycle;
    out->requests = ext_.requests;
    out->last_issue_cycle = ext_.last_issue_cycle;
    out->bytes = ext_.requests * request_bytes_;
  }
  return true;
}

BurstResult HbmTilePort::serve(tlm::tlm_fw_transport_if<>& fw, const Burst& b, uint8_t* data) {
  prepare(b, data);
  ext_.kind = HbmBurstExtension::Kind::Burst;
  send(fw);
  BurstResult r;
  r.completion_cycle = ext_.completion_cycle;
  r.requests = ext_.requests;
  r.bytes = ext_.requests * request_bytes_;
  r.last_issue_cycle = ext_.last_issue_cycle;
  return r;
}

BurstResult hbm_transfer(tlm::tlm_fw_transport_if<>& fw, const Burst& b, HbmAccessMode mode, uint32_t request_bytes,
                         uint8_t* data) {
  TxnLease t;
  BurstResult res;
  if (mode == HbmAccessMode::Fast) {
    t->prepare(b.base, b.write, data, uint64_t(b.rows) * b.row_bytes);
    t->ext.kind = HbmBurstExtension::Kind::Burst;
    set_geometry(t->ext, b);
    t->send(fw);
    res.completion_cycle = t->ext.completion_cycle;
    res.requests = t->ext.requests;
    res.bytes = res.requests * request_bytes;
    res.last_issue_cycle = t->ext.last_issue_cycle;
    return res;
  }
  // Request mode: one transaction per request, row-major, bundles of par_dispatch per cycle.
  const uint64_t per_row = b.requests_per_row(request_bytes);
  res.completion_cycle = b.issue_cycle;
  res.last_issue_cycle = b.issue_cycle;
  t->ext.kind = HbmBurstExtension::Kind::Request;
  uint64_t j = 0;
  for (uint64_t r = 0; r < b.rows; ++r) {
    for (uint64_t q = 0; q < per_row; ++q, ++j) {
      const uint64_t off = q * request_bytes;
      const uint64_t len = std::min<uint64_t>(request_bytes, b.row_bytes - off);
      t->prepare(b.request_addr(r, q, request_bytes), b.write, data ? data + r * b.row_bytes + off : nullptr, len);
      t->ext.issue_cycle = b.request_issue_cycle(j);
      t->ext.initiator = b.initiator;
      t->send(fw);
      res.completion_cycle = std::max(res.completion_cycle, t->ext.completion_cycle);
      res.last_issue_cycle = t->ext.issue_cycle;
    }
  }
  res.requests = j;
  res.bytes = j * request_bytes;
  return res;
}

BurstResult HbmInitiator::transfer(const Burst& burst, uint8_t* data, sc_core::sc_time* delay) {
  BurstResult r = hbm_transfer(*socket_.operator->(), burst, mode_, request_bytes_, data);
  if (delay) *delay += period_ * double(r.completion_cycle - burst.issue_cycle);
  return r;
}

}  // namespace stepsim
