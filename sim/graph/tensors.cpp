#include "sim/graph/tensors.h"

#include "sim/graph/output_file.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "hw/stream/simd.h"
#include "sim/graph/npy.h"

namespace stepsim {

namespace {

bool shape_matches(const NpyArray& a, const TensorSpec& t) {
  if (a.shape.size() == 2) return a.shape[0] == t.rows && a.shape[1] == t.cols;
  return t.rows == 1 && a.shape[0] == t.cols;  // a 1-D file is one row
}

std::string shape_text(const NpyArray& a) {
  std::string s = "(";
  for (size_t k = 0; k < a.shape.size(); ++k) s += (k ? ", " : "") + std::to_string(a.shape[k]);
  return s + (a.shape.size() == 1 ? ",)" : ")");
}

// splitmix64: a fixed, portable generator (std::uniform_*_distribution is not). Its state only
// counts (s += the golden-ratio constant), so draw k of seed s is mix(s + (k + 1) * constant):
// any range of draws on its own, which lets the loops below vectorize with the same values.
constexpr uint64_t kSplitMixStep = 0x9E3779B97F4A7C15ull;

inline uint64_t splitmix_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [-1, 1): the draw's top 53 bits x as a double in [0, 2), minus 1 (exact), rounded to
// float: (x - 2^52) 2^-52 rounded. Computed as the integer x - 2^52 (|.| <= 2^52) rounded to
// float, then scaled by 2^-52: scaling by a power of two commutes with rounding here (no
// overflow, no subnormal), so the bits are the same, in one conversion instead of four
// operations. Draws first .. first + n - 1.
STEPSIM_SIMD_CLONES void random_floats(uint64_t seed, uint64_t first, float* out, uint64_t n) {
  uint64_t state = seed + (first + 1) * kSplitMixStep;
  for (uint64_t k = 0; k < n; ++k, state += kSplitMixStep)
    out[k] = float(int64_t(splitmix_mix(state) >> 11) - (int64_t(1) << 52)) * 0x1.0p-52f;
}

// Integers in -8..7.
STEPSIM_SIMD_CLONES void random_ints(uint64_t seed, uint64_t first, int32_t* out, uint64_t n) {
  uint64_t state = seed + (first + 1) * kSplitMixStep;
  for (uint64_t k = 0; k < n; ++k, state += kSplitMixStep) out[k] = int32_t(splitmix_mix(state) % 16) - 8;
}

}  // namespace

void check_tensor_file(const TensorSpec& t, const std::string& where) {
  NpyArray h;
  try {
    h = check_npy(t.file);
  } catch (const std::exception& e) {
    throw std::invalid_argument(where + ": " + e.what());
  }
  if (!shape_matches(h, t))
    throw std::invalid_argument(where + ": file '" + t.file + "' holds shape " + shape_text(h) +
                                " but the tensor is declared [" + std::to_string(t.rows) + ", " +
                                std::to_string(t.cols) + "]");
  if (h.is_int != (t.dtype == DType::INT32))
    throw std::invalid_argument(where + ": file '" + t.file + "' holds " + (h.is_int ? "integers" : "floats") +
                                " but the tensor is " + dtype_name(t.dtype));
}

TileData initial_values(const TensorSpec& t) {
  const uint64_t n = t.rows * t.cols;
  TileData d;
  if (t.init == "file") {
    NpyArray a = read_npy(t.file);
    if (!shape_matches(a, t) || a.is_int != (t.dtype == DType::INT32))
      throw std::invalid_argument("tensor '" + t.name + "': file '" + t.file + "' does not match its declaration");
    d.f = std::move(a.f);
    d.i = std::move(a.i);
    return d;
  }
  const bool random = t.init == "random";
  if (t.dtype == DType::INT32) {
    d.i.resize(n);
    random ? random_ints(t.seed, 0, d.i.data(), n) : std::fill(d.i.begin(), d.i.end(), 0);
  } else {
    d.f.resize(n);
    random ? random_floats(t.seed, 0, d.f.data(), n) : std::fill(d.f.begin(), d.f.end(), 0.0f);
  }
  return d;
}

OffChipMemory::ElementSource random_values(const TensorSpec& t) {
  if (t.dtype == DType::INT32)
    return [seed = t.seed](uint64_t first, uint64_t n, void* out) {
      random_ints(seed, first, static_cast<int32_t*>(out), n);
    };
  return [seed = t.seed](uint64_t first, uint64_t n, void* out) {
    random_floats(seed, first, static_cast<float*>(out), n);
  };
}

void check_given_values(const Graph& g, const std::map<std::string, TileData>& values) {
  std::map<std::string, const TensorSpec*> by_name;  // the last of a name, as a scan would find
  for (const TensorSpec& s : g.tensors) by_name[s.name] = &s;
  for (const auto& [name, v] : values) {
    const auto found = by_name.find(name);
    const TensorSpec* t = found == by_name.end() ? nullptr : found->second;
    if (!t) throw std::invalid_argument("input values for '" + name + "': the graph has no tensor of that name");
    const bool is_int = t->dtype == DType::INT32;
    const size_t given = is_int ? v.i.size() : v.f.size();
    const std::string decl =
        "[" + std::to_string(t->rows) + " x " + std::to_string(t->cols) + "] " + dtype_name(t->dtype);
    if ((is_int ? !v.f.empty() : !v.i.empty()) || given != t->rows * t->cols)
      throw std::invalid_argument("input values for tensor '" + name + "' (declared " + decl + "): got " +
                                  std::to_string(v.f.size() + v.i.size()) + (v.i.empty() ? " float" : " integer") +
                                  " values, need " + std::to_string(t->rows * t->cols) +
                                  (is_int ? " integer" : " float") + " values");
  }
}

void prepare_output_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::invalid_argument("cannot use '" + dir +
                                "' as the output folder: " + (ec ? ec.message() : std::string("it is not a folder")));
}

std::string write_tensor_npy(const std::string& dir, const std::string& name, uint64_t rows, uint64_t cols, DType dtype,
                             const TileData& values) {
  prepare_output_dir(dir);
  NpyArray a;
  a.shape = {rows, cols};
  a.is_int = dtype == DType::INT32;
  a.f = values.f;
  a.i = values.i;
  const std::string path = path_in_folder(dir, name + ".npy", "tensor");
  write_npy(path, a);
  return path;
}

}  // namespace stepsim
