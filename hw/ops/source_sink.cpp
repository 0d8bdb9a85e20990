// Sources (literal streams, tensors and trace-derived selector/metadata streams, all handed
// over as beat lists by the graph loader) and sinks that record what arrives.
#include "hw/ops/op.h"

namespace stepsim {

namespace {

class Source : public Op {
 public:
  using Op::Op;

 protected:
  void run() override {
    const std::string key = cfg_.params.get(param::kStream);
    auto it = cfg_.env->streams.find(key);
    if (it == cfg_.env->streams.end()) fail("no stream named '" + key + "' was provided");
    const uint64_t interval = uint64_t(cfg_.params.get(param::kInterval));
    const std::vector<Beat>& beats = it->second;
    // Sequencing: start once every `after` stream has ended (contents ignored). They are
    // drained in arrival order, not one after the other: a producer blocked on a full `after`
    // channel could otherwise hold up the others (e.g. lock-step broadcasts upstream).
    std::vector<Channel*> pending;
    for (size_t i = 0; i < num_in(); ++i) pending.push_back(&in(i));
    while (!pending.empty()) {
      const int k = ctx().select_earliest(pending);
      if (k < 0) break;
      if (pending[size_t(k)]->recv().done) pending.erase(pending.begin() + k);
    }
    for (size_t i = 0; i < beats.size(); ++i) {
      if (i > 0) charge(interval);
      emit_all(beats[i]);
    }
  }
};

class Sink : public Op {
 public:
  using Op::Op;

 protected:
  void run() override {
    for (;;) {
      Beat b = in(0).recv();
      times_.push_back(ctx().now());
      charge(0);
      bool done = b.done;
      if (recorded_.size() == kMaxStreamBeats)
        fail("more than " + std::to_string(kMaxStreamBeats) + " beats arrived; a sink records at most that many");
      recorded_.push_back(std::move(b));
      if (done) break;
    }
  }
  void report(OpReport& r) override {
    r.records = true;
    r.recorded = std::move(recorded_);
    r.recorded_times = std::move(times_);
  }

 private:
  std::vector<Beat> recorded_;
  std::vector<uint64_t> times_;
};

}  // namespace

void register_source_sink_ops(OpRegistry& r) {
  r.add(OpInfo{OpKind::kSource,
               "Source",
               OpCategory::kSourceSink,
               "Emits a given token stream (literal text, a tensor's tiles, or a selector/metadata stream read "
               "from a trace file).",
               "One beat every `interval` cycles, from the arrival of the last `after` stream's done token (or cycle "
               "0).",
               {{"after*",
                 "(optional) streams whose end the source waits for, e.g. the store acknowledgements of an "
                 "earlier phase of the program; their contents are ignored",
                 true}},
               {{"out*", "copies of the stream (usually just out0)"}},
               {param_spec(param::kStream, "", "name of the stream in the graph's streams: section", true),
                param_spec(param::kInterval, "1", "cycles between beats", false, {0, int64_t(kMaxCycles)})},
               false,
               [](const OpConfig& c) { return std::make_unique<Source>(c); }});
  r.add(OpInfo{OpKind::kSink,
               "Sink",
               OpCategory::kSourceSink,
               "Consumes a stream and records every beat with its arrival time.",
               "0 cycles per beat.",
               {{"in", "stream to record"}},
               {},
               {},
               false,
               [](const OpConfig& c) { return std::make_unique<Sink>(c); }});
}

}  // namespace stepsim
