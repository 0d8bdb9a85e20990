// NumPy .npy files (format version 1.0/2.0/3.0), the tensor format of graph inputs and of the
// stored outputs of functional runs. Only what tensors need: C order, 1-D or 2-D, little-endian
// float32/float64/float16/int32/int64 on read; float32 or int32 on write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stepsim {

struct NpyArray {
  std::vector<uint64_t> shape;  // 1-D arrays read as [n]
  bool is_int = false;          // values in i (int32/int64 files) rather than f
  std::vector<float> f;         // float files, converted to float32
  std::vector<int32_t> i;       // integer files (int64 values must fit in int32)
};

// Every reader checks the header and that the file's size is exactly the header plus the data
// its shape and dtype need (without reading the data). They throw std::runtime_error naming the
// file and what is wrong: missing, not .npy, Fortran order, unsupported dtype, truncated or
// too long (the expected and found sizes), an int64 value outside int32.
// read_npy_header: the header (shape and dtype) only.
NpyArray read_npy_header(const std::string& path);
// check_npy: read_npy's checks without keeping the data (int64 files are streamed to check
// that every value fits in int32); returns the header. What timing mode checks.
NpyArray check_npy(const std::string& path);
NpyArray read_npy(const std::string& path);

// Writes through OutputFile (sim/graph/output_file.h): a regular file is replaced atomically, so an
// interrupted run leaves no file that looks complete; a failed write throws std::runtime_error
// naming the file. 2-D shape [rows, cols]; f as float32 (is_int = false) or i as int32.
void write_npy(const std::string& path, const NpyArray& a);

}  // namespace stepsim
