#include "sim/graph/npy.h"
#include "sim/graph/output_file.h"

#include "hw/presets/input_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

namespace stepsim {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw std::runtime_error("tensor file '" + path + "': " + why);
}

// The header dict as NumPy writes it, a Python literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), } then spaces and a newline. Exactly these three keys, each once, in any order;
// values keep their form: a quoted string without its quotes, a tuple with its parentheses, or a
// word (True, False). Anything else is an error naming what was found.
class HeaderDict {
 public:
  HeaderDict(const std::string& text, const std::string& path) : h_(text), path_(path) { read(); }
  const std::string& get(const std::string& key) const { return values_.at(key); }
  bool quoted(const std::string& key) const { return quoted_.count(key) > 0; }

 private:
  void read() {
    expect('{');
    while (!next_is('}')) {
      bool was_quoted = false;
      const std::string key = value(was_quoted);
      if (!was_quoted) bad(path_, "malformed header: a key must be a quoted name, got '" + key + "'");
      if (key != "descr" && key != "fortran_order" && key != "shape")
        bad(path_, "header has an unknown key '" + key + "' (a .npy header has descr, fortran_order and shape)");
      if (values_.count(key)) bad(path_, "header gives '" + key + "' twice");
      expect(':');
      values_[key] = value(was_quoted);
      if (was_quoted) quoted_.insert(key);
      if (!next_is('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != h_.size()) bad(path_, "malformed header: text after the closing '}'");
    for (const char* key : {"descr", "fortran_order", "shape"})
      if (!values_.count(key)) bad(path_, std::string("header has no '") + key + "'");
  }
  void skip_space() {
    while (pos_ < h_.size() && (h_[pos_] == ' ' || h_[pos_] == '\t' || h_[pos_] == '\n' || h_[pos_] == '\r')) ++pos_;
  }
  bool next_is(char c) {
    skip_space();
    return pos_ < h_.size() && h_[pos_] == c;
  }
  void expect(char c) {
    if (!next_is(c)) bad(path_, std::string("malformed header: expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }
  std::string value(bool& was_quoted) {
    skip_space();
    was_quoted = false;
    if (pos_ == h_.size()) bad(path_, "malformed header: it ends early");
    const char c = h_[pos_];
    size_t end;
    if (c == '\'' || c == '"') {
      end = h_.find(c, pos_ + 1);
      if (end == std::string::npos) bad(path_, "malformed header: an unclosed string");
      was_quoted = true;
      std::string v = h_.substr(pos_ + 1, end - pos_ - 1);
      pos_ = end + 1;
      return v;
    }
    if (c == '(') {
      end = h_.find(')', pos_);
      if (end == std::string::npos) bad(path_, "malformed shape: no ')'");
      std::string v = h_.substr(pos_, end - pos_ + 1);
      pos_ = end + 1;
      return v;
    }
    end = pos_;
    while (end < h_.size() && (std::isalnum(static_cast<unsigned char>(h_[end])) || h_[end] == '_')) ++end;
    if (end == pos_)
      bad(path_, "malformed header: unexpected '" + std::string(1, c) + "' at byte " + std::to_string(pos_));
    std::string v = h_.substr(pos_, end - pos_);
    pos_ = end;
    return v;
  }

  const std::string& h_;
  const std::string& path_;
  size_t pos_ = 0;
  std::map<std::string, std::string> values_;
  std::set<std::string> quoted_;
};

struct Header {
  NpyArray a;
  std::string descr;
  uint64_t count = 1;        // elements
  uint64_t esize = 0;        // bytes per element
  uint64_t data_offset = 0;  // bytes before the data
};

// Parses the header and checks the data length against the file size (nothing is allocated
// from a size the file does not hold).
Header parse_header(std::ifstream& in, const std::string& path) {
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) bad(path, "cannot read its size: " + ec.message());
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) bad(path, "not a .npy file (bad magic)");
  const int major = uint8_t(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) bad(path, "truncated header");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) bad(path, "truncated header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  } else {
    bad(path, "unsupported .npy version " + std::to_string(major));
  }
  Header r;
  r.data_offset = uint64_t(in.tellg()) + hlen;
  if (r.data_offset > file_size)
    bad(path, "truncated header: it declares " + std::to_string(hlen) + " bytes but the file has " +
                  std::to_string(file_size) + " bytes in all");
  std::string h(hlen, '\0');
  if (!in.read(&h[0], hlen)) bad(path, "truncated header");
  const HeaderDict dict(h, path);
  if (!dict.quoted("descr"))
    bad(path, "header's 'descr' must be a quoted dtype such as '<f4', got " + dict.get("descr"));
  r.descr = dict.get("descr");
  const std::string& fortran = dict.get("fortran_order");
  if (dict.quoted("fortran_order") || (fortran != "False" && fortran != "True"))
    bad(path, "header's 'fortran_order' must be True or False, got '" + fortran + "'");
  if (fortran == "True") bad(path, "Fortran-order arrays are not supported");
  const std::string shape = dict.get("shape");
  // "(3, 4)", "(4,)": whole numbers separated by commas.
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') bad(path, "malformed shape '" + shape + "'");
  bool in_number = false, after_space = false;
  for (char c : shape.substr(1)) {
    if (c >= '0' && c <= '9') {
      if (!in_number)
        r.a.shape.push_back(0);
      else if (after_space)
        bad(path, "malformed shape '" + shape + "'");
      uint64_t& d = r.a.shape.back();
      if (__builtin_mul_overflow(d, uint64_t(10), &d) || __builtin_add_overflow(d, uint64_t(c - '0'), &d))
        bad(path, "shape " + shape + " has a dimension beyond 64 bits");
      in_number = true;
      after_space = false;
    } else if (c == ',' || c == ')') {
      in_number = after_space = false;
    } else if (c == ' ') {
      after_space = in_number;
    } else {
      bad(path, "malformed shape '" + shape + "'");
    }
  }
  if (r.a.shape.empty() || r.a.shape.size() > 2)
    bad(path, "shape " + shape + " is not 1-D or 2-D (tensors are [rows, cols])");
  static const char* kTypes[] = {"<f4", "<f8", "<f2", "<i4", "<i8"};
  bool known = false;
  for (const char* t : kTypes) known = known || r.descr == t;
  if (!known) bad(path, "dtype '" + r.descr + "' is not supported (float16/32/64, int32/64, little-endian)");
  r.a.is_int = r.descr[1] == 'i';
  r.esize = uint64_t(r.descr[2] - '0');
  uint64_t data_bytes = r.esize;
  for (uint64_t d : r.a.shape)
    if (__builtin_mul_overflow(r.count, d, &r.count) || __builtin_mul_overflow(data_bytes, d, &data_bytes))
      bad(path, "shape " + shape + " has more elements than 64 bits count");
  // The same check in both modes (timing mode reads no data): the file holds exactly the data.
  const uint64_t found = file_size - r.data_offset;
  if (found != data_bytes)
    bad(path, std::string(found < data_bytes ? "truncated data" : "data longer than its header says") + ": shape " +
                  shape + " of " + r.descr + " needs " + std::to_string(data_bytes) + " bytes of data after the " +
                  std::to_string(r.data_offset) + "-byte header (" + std::to_string(r.data_offset + data_bytes) +
                  " bytes in all), but the file has " + std::to_string(file_size) + " bytes (" + std::to_string(found) +
                  " of data)");
  return r;
}

// An int64 value as int32, or an error naming it and its place.
int32_t narrow_int64(int64_t x, uint64_t k, const std::string& path) {
  if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
    bad(path, "int64 value " + std::to_string(x) + " (element " + std::to_string(k) +
                  ", counting from 0) does not fit in int32");
  return int32_t(x);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal half: normalise
      exp = 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (uint32_t(exp + 127 - 15) << 23) | (mant << 13);
    }
  } else {
    bits = sign | (uint32_t(exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

NpyArray read_npy_header(const std::string& path) {
  check_input_file(path, "tensor file", UINT64_MAX);
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open it");
  return parse_header(in, path).a;
}

NpyArray check_npy(const std::string& path) {
  check_input_file(path, "tensor file", UINT64_MAX);
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open it");
  Header h = parse_header(in, path);
  if (h.descr != "<i8") return h.a;
  std::vector<int64_t> chunk(8192);  // streamed: nothing of the data is kept
  for (uint64_t k = 0; k < h.count;) {
    const uint64_t n = std::min<uint64_t>(chunk.size(), h.count - k);
    if (!in.read(reinterpret_cast<char*>(chunk.data()), std::streamsize(n * 8))) bad(path, "cannot read its data");
    for (uint64_t j = 0; j < n; ++j) narrow_int64(chunk[j], k + j, path);
    k += n;
  }
  return h.a;
}

NpyArray read_npy(const std::string& path) {
  check_input_file(path, "tensor file", UINT64_MAX);
  std::ifstream in(path, std::ios::binary);
  if (!in) bad(path, "cannot open it");
  Header h = parse_header(in, path);  // the file holds all the data: the sizes below are real
  const size_t esize = size_t(h.esize);
  std::vector<char> raw(h.count * esize);
  if (!raw.empty() && !in.read(raw.data(), std::streamsize(raw.size())))
    bad(path, "cannot read its " + std::to_string(raw.size()) + " bytes of data");
  NpyArray& a = h.a;
  if (a.is_int)
    a.i.resize(h.count);
  else
    a.f.resize(h.count);
  for (uint64_t k = 0; k < h.count; ++k) {
    const char* p = raw.data() + k * esize;
    if (h.descr == "<f4") {
      std::memcpy(&a.f[k], p, 4);
    } else if (h.descr == "<f8") {
      double d;
      std::memcpy(&d, p, 8);
      a.f[k] = float(d);
    } else if (h.descr == "<f2") {
      uint16_t x;
      std::memcpy(&x, p, 2);
      a.f[k] = half_to_float(x);
    } else if (h.descr == "<i4") {
      std::memcpy(&a.i[k], p, 4);
    } else {
      int64_t x;
      std::memcpy(&x, p, 8);
      a.i[k] = narrow_int64(x, k, path);
    }
  }
  return a;
}

void write_npy(const std::string& path, const NpyArray& a) {
  if (a.shape.size() != 2) throw std::invalid_argument("write_npy: expected a 2-D shape");
  const uint64_t n = a.shape[0] * a.shape[1];
  if ((a.is_int ? a.i.size() : a.f.size()) != n) throw std::invalid_argument("write_npy: shape and data disagree");
  std::string dict = std::string("{'descr': '") + (a.is_int ? "<i4" : "<f4") + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(a.shape[0]) + ", " + std::to_string(a.shape[1]) + "), }";
  // Magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64 bytes.
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  OutputFile file(path, "tensor");  // atomic for a regular file (sim/graph/output_file.h)
  std::ostream& out = file.stream();
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = uint16_t(dict.size());
  const char lb[2] = {char(len & 0xff), char(len >> 8)};
  out.write(lb, 2);
  out.write(dict.data(), std::streamsize(dict.size()));
  if (a.is_int)
    out.write(reinterpret_cast<const char*>(a.i.data()), std::streamsize(n * 4));
  else
    out.write(reinterpret_cast<const char*>(a.f.data()), std::streamsize(n * 4));
  file.commit();
}

}  // namespace stepsim
