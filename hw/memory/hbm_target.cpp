#include "hw/memory/hbm_target.h"

namespace stepsim {

HbmTarget::HbmTarget(sc_core::sc_module_name name, const HbmParams& params, sc_core::sc_time clock_period)
    : sc_core::sc_module(name), socket("socket"), period_(clock_period) {
  socket.bind(*this);
  reconfigure(params);
}

void HbmTarget::reconfigure(const HbmParams& params) {
  model_ = make_hbm_model(params.model, params);
}

tlm::tlm_sync_enum HbmTarget::nb_transport_fw(tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                              sc_core::sc_time& delay) {
  b_transport(trans, delay);
  phase = tlm::BEGIN_RESP;
  return tlm::TLM_COMPLETED;
}

bool HbmTarget::get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi& dmi) {
  dmi.allow_none();
  return false;
}

void HbmTarget::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const tlm::tlm_command cmd = trans.get_command();
  trans.set_dmi_allowed(false);
  if (cmd == tlm::TLM_IGNORE_COMMAND) {
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  if (trans.get_byte_enable_ptr() != nullptr) {
    trans.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  const bool write = cmd == tlm::TLM_WRITE_COMMAND;
  uint8_t* data = trans.get_data_ptr();
  const uint64_t len = trans.get_data_length();
  const bool functional = data != nullptr && len > 0;
  if (functional && trans.get_streaming_width() < len) {
    trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  const uint64_t addr = trans.get_address();
  const uint32_t rb = model_->params().request_bytes;

  HbmBurstExtension* ext = nullptr;
  trans.get_extension(ext);

  if (ext && ext->kind == HbmBurstExtension::Kind::BurstResult) {
    BurstResult r;
    ext->ready = model_->try_result(ext->handle, ext->watermark, &r);
    if (ext->ready) {
      ext->completion_cycle = r.completion_cycle;
      ext->requests = r.requests;
      ext->last_issue_cycle = r.last_issue_cycle;
    }
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }

  uint64_t issue, completion;
  if (ext && ext->kind == HbmBurstExtension::Kind::Request) {
    if (functional && len > rb) {
      trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
      return;
    }
    if (functional) {
      if (write)
        mem_.write(addr, data, len);
      else
        mem_.read(addr, data, len);
    }
    issue = ext->issue_cycle;
    completion = model_->serve_request(addr, write, issue, ext->initiator).completion_cycle;
    ext->completion_cycle = completion;
    ext->requests = 1;
    ext->last_issue_cycle = issue;
  } else {
    Burst b;
    b.base = addr;
    b.write = write;
    if (ext) {
      b.rows = ext->rows;
      b.row_bytes = ext->row_bytes;
      b.row_pitch = ext->row_pitch;
      b.issue_cycle = ext->issue_cycle;
      b.par_dispatch = ext->par_dispatch;
      b.initiator = ext->initiator;
    } else {
      b.rows = 1;
      b.row_bytes = len;
      b.issue_cycle = model_->last_issue_cycle();
      b.initiator = model_->last_issue_initiator();
      b.par_dispatch = model_->params().channels;
    }
    if (functional && len != uint64_t(b.rows) * b.row_bytes) {
      trans.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
      return;
    }
    if (functional) {
      if (write)
        mem_.write_rows(addr, b.rows, b.row_bytes, b.pitch(), data);
      else
        mem_.read_rows(addr, b.rows, b.row_bytes, b.pitch(), data);
    }
    if (ext && ext->kind == HbmBurstExtension::Kind::BurstIssue) {
      BurstResult info;
      ext->handle = model_->issue_burst(b, &info);
      ext->requests = info.requests;
      ext->last_issue_cycle = info.last_issue_cycle;
      ext->ready = false;
      trans.set_response_status(tlm::TLM_OK_RESPONSE);
      return;
    }
    const BurstResult r = model_->serve_burst(b);
    issue = b.issue_cycle;
    completion = r.completion_cycle;
    if (ext) {
      ext->completion_cycle = completion;
      ext->requests = r.requests;
      ext->last_issue_cycle = r.last_issue_cycle;
    }
  }
  delay += period_ * double(completion - issue);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int HbmTarget::transport_dbg(tlm::tlm_generic_payload& trans) {
  uint8_t* data = trans.get_data_ptr();
  const uint64_t len = trans.get_data_length();
  if (data == nullptr || len == 0) return 0;
  uint64_t rows = 1, row_bytes = len, pitch = len;
  HbmBurstExtension* ext = nullptr;
  trans.get_extension(ext);
  if (ext && ext->kind == HbmBurstExtension::Kind::Burst && ext->rows > 0 &&
      uint64_t(ext->rows) * ext->row_bytes == len) {
    rows = ext->rows;
    row_bytes = ext->row_bytes;
    pitch = ext->row_pitch ? ext->row_pitch : ext->row_bytes;
  }
  if (trans.get_command() == tlm::TLM_WRITE_COMMAND)
    mem_.write_rows(trans.get_address(), rows, row_bytes, pitch, data);
  else if (trans.get_command() == tlm::TLM_READ_COMMAND)
    mem_.read_rows(trans.get_address(), rows, row_bytes, pitch, data);
  else
    return 0;
  return static_cast<unsigned int>(len);
}

}  // namespace stepsim
