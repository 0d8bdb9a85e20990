// Independent, straightforward references of the layers in graphs/layers (no code shared with
// the operators or tile functions): plain loops in double precision on the same bf16 inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace stepsim::reference {

// Row-major matrix.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Mat() = default;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(size_t(r * c), 0.0) {}
  double& at(int64_t r, int64_t c) { return v[size_t(r * cols + c)]; }
  double at(int64_t r, int64_t c) const { return v[size_t(r * cols + c)]; }
};

inline Mat from_floats(int64_t rows, int64_t cols, const std::vector<float>& f) {
  Mat m(rows, cols);
  for (size_t i = 0; i < m.v.size(); ++i) m.v[i] = double(f[i]);
  return m;
}

inline Mat matmul(const Mat& a, const Mat& b) {
  Mat o(a.rows, b.cols);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.cols; ++k)
      for (int64_t j = 0; j < b.cols; ++j) o.at(i, j) += a.at(i, k) * b.at(k, j);
  return o;
}

// y = (SiLU(x W1) * (x W3)) W2 for the rows of x.
inline Mat swiglu(const Mat& x, const Mat& w1, const Mat& w3, const Mat& w2) {
  Mat g = matmul(x, w1), u = matmul(x, w3);
  for (size_t i = 0; i < g.v.size(); ++i) g.v[i] = g.v[i] / (1.0 + std::exp(-g.v[i])) * u.v[i];
  return matmul(g, w2);
}

// Decode attention of one request: softmax(q K^T) V over the first `len` rows of k and v.
inline Mat attention(const Mat& q, const Mat& k, const Mat& v, int64_t len) {
  Mat o(q.rows, v.cols);
  for (int64_t i = 0; i < q.rows; ++i) {
    std::vector<double> s(static_cast<size_t>(len), 0.0);
    double mx = -1e300, sum = 0;
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t d = 0; d < q.cols; ++d) s[size_t(t)] += q.at(i, d) * k.at(t, d);
      mx = std::max(mx, s[size_t(t)]);
    }
    for (int64_t t = 0; t < len; ++t) sum += s[size_t(t)] = std::exp(s[size_t(t)] - mx);
    for (int64_t t = 0; t < len; ++t)
      for (int64_t d = 0; d < v.cols; ++d) o.at(i, d) += s[size_t(t)] / sum * v.at(t, d);
  }
  return o;
}

inline Mat rows_of(const Mat& m, int64_t first, int64_t n) {
  Mat o(n, m.cols);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < m.cols; ++c) o.at(r, c) = m.at(first + r, c);
  return o;
}

inline Mat row(const Mat& m, int64_t r) {
  Mat o(1, m.cols);
  for (int64_t c = 0; c < m.cols; ++c) o.at(0, c) = m.at(r, c);
  return o;
}

}  // namespace stepsim::reference
