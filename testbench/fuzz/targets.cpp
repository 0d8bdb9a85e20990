#include "testbench/fuzz/targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <stdexcept>
#include <typeinfo>

#include "hw/presets/hardware.h"
#include "hw/presets/tech.h"
#include "hw/stream/token.h"
#include "sim/graph/loader.h"
#include "sim/graph/npy.h"
#include "sim/graph/tensors.h"
#include "sim/shape/infer.h"

namespace stepsim::fuzz {

namespace {

// A property of the tool broken (not an exception of the parser): reported as it is.
struct Finding {
  std::string what;
};

std::string as_text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// The readers take a path: the input goes into an in-memory file (memfd), reached through
// /proc/self/fd, one per name and process. Nothing is left on disk, even after a crash.
std::string input_file(const char* name, const uint8_t* data, size_t size) {
  struct File {
    int fd;
    std::string path;
  };
  static File files[2] = {{-1, ""}, {-1, ""}};
  File& f = files[std::strcmp(name, "csv") == 0 ? 1 : 0];  // npy and preset never meet
  if (f.fd < 0) {
    f.fd = memfd_create(name, 0);
    if (f.fd < 0) throw std::logic_error("fuzz harness: memfd_create failed");
    f.path = "/proc/self/fd/" + std::to_string(f.fd);
  }
  if (ftruncate(f.fd, 0) != 0 || (size && pwrite(f.fd, data, size, 0) != ssize_t(size)))
    throw std::logic_error("fuzz harness: cannot write the input file");
  return f.path;
}

// YAML single-quoted scalar.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// Text of the C++ library or of yaml-cpp that must not reach a user (issue 19, item 6),
// unless the input itself contains it (a message may quote the input).
const char* const kLibraryText[] = {"stoll", "stoull",   "stoul",          "stoi",    "stod",
                                    "stof",  "yaml-cpp", "bad conversion", "vector",  "basic_string",
                                    "_M_",   "std::",    "bad_alloc",      "max_size"};

std::string library_text_in(const std::string& message, const std::string& input) {
  for (const char* t : kLibraryText)
    if (message.find(t) != std::string::npos && input.find(t) == std::string::npos) return t;
  return "";
}

// Runs `body` and judges what it threw (see outcome).
std::string judge(const std::function<void()>& body, const std::string& input);

}  // namespace

void graph(const uint8_t* data, size_t size) {
  parse_graph(as_text(data, size), "fuzz.yaml", std::string(STEPSIM_SOURCE_DIR) + "/graphs/examples", {});
}

void tokens(const uint8_t* data, size_t size) {
  const std::vector<Token> parsed = parse_tokens(as_text(data, size));
  const std::vector<Beat> beats = to_beats(parsed);
  // What the tool prints must read back as the same stream (eval prints streams this way).
  const std::string printed = format_beats(beats);
  std::vector<Token> again;
  try {
    again = parse_tokens(printed);
  } catch (const std::exception& e) {
    throw Finding{"the printed stream '" + printed + "' does not parse back: " + e.what()};
  }
  if (format_tokens(again) != printed) throw Finding{"'" + printed + "' parses back as '" + format_tokens(again) + "'"};
}

void npy(const uint8_t* data, size_t size) {
  const std::string path = input_file("npy", data, size);
  const NpyArray header = read_npy_header(path);
  const NpyArray a = read_npy(path);
  if (a.shape != header.shape || a.is_int != header.is_int)
    throw Finding{"read_npy and read_npy_header disagree on shape or dtype"};
  // The graph's view of the same file (both modes check it alike): a tensor of its shape.
  if (a.shape.size() == 2) {
    TensorSpec t;
    t.name = "fuzz";
    t.rows = a.shape[0];
    t.cols = a.shape[1];
    t.dtype = a.is_int ? DType::INT32 : DType::FP32;
    t.init = "file";
    t.file = path;
    check_tensor_file(t, "fuzz.yaml: tensor 'fuzz'");
    initial_values(t);
  }
}

void csv(const uint8_t* data, size_t size) {
  const std::string path = input_file("csv", data, size);
  const CsvTable table = read_csv(path);
  // The same file as each kind of trace stream, named by its last column; each is judged on
  // its own, so that a clear error in one does not hide the other.
  const std::string last = quoted(table.header.back());
  const std::string streams[] = {
      "{trace: " + quoted(path) + ", kind: selector, columns: " + last + ", rank: 1}",
      "{trace: " + quoted(path) + ", kind: scalar, column: " + last + ", add: 1, ceil_div: 1024, rank: 1}"};
  for (const std::string& stream : streams) {
    const std::string yaml = "streams:\n  s: " + stream + "\nnodes: []\n";
    const std::string finding = judge([&] { parse_graph(yaml, "fuzz.yaml", "/", {}); }, as_text(data, size));
    if (!finding.empty()) throw Finding{"as a trace stream " + stream + ": " + finding};
  }
}

void preset(const uint8_t* data, size_t size) { load_preset(input_file("preset", data, size)); }

void tech(const uint8_t* data, size_t size) { load_technology(input_file("tech", data, size)); }

// The expression as the loader reads a `symbols:` value or a `dims:` size, then evaluated with the
// largest and smallest 64-bit values for its symbols (what a trace or --sym may give them): the
// bounds must keep both the parse and the substitution small.
void expr(const uint8_t* data, size_t size) {
  shape::SymbolTable syms;
  const GiNaC::ex e = syms.parse(as_text(data, size));
  for (const int64_t v : {INT64_MAX, INT64_MIN, int64_t(0), int64_t(-1)}) {
    GiNaC::exmap values;
    for (const std::string& name : syms.names()) values[syms.get(name)] = GiNaC::numeric(long(v));
    try {
      (void)e.subs(values);
    } catch (const std::exception&) {  // GiNaC's division by zero: the expression is refused, not broken
    }
  }
}

std::string outcome(Target target, const uint8_t* data, size_t size) {
  return judge([&] { target(data, size); }, as_text(data, size));
}

namespace {
std::string judge(const std::function<void()>& body, const std::string& input) {
  try {
    body();
    return "";
  } catch (const Finding& f) {
    return f.what;
  } catch (const std::exception& e) {
    const std::type_info& type = typeid(e);
    const std::string message = e.what();
    if (type != typeid(std::invalid_argument) && type != typeid(std::runtime_error))
      return std::string("exception of type ") + type.name() + ": " + message;
    if (message.empty()) return std::string(type.name()) + " without a message";
    const std::string library = library_text_in(message, input);
    if (!library.empty()) return "library text '" + library + "' in the error: " + message;
    return "";
  } catch (...) {
    return "an exception not derived from std::exception";
  }
}
}  // namespace

Target target_named(const std::string& name) {
  if (name == "graph") return graph;
  if (name == "tokens") return tokens;
  if (name == "npy") return npy;
  if (name == "csv") return csv;
  if (name == "preset") return preset;
  if (name == "tech") return tech;
  if (name == "expr") return expr;
  return nullptr;
}

}  // namespace stepsim::fuzz
