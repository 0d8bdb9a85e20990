#include "hw/stream/random_stream.h"

namespace stepsim {

namespace {

int random_len(std::mt19937_64& rng, const RandomStreamOptions& o) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (o.max_len <= 0 || u(rng) < o.empty_prob) return 0;
  return std::uniform_int_distribution<int>(1, o.max_len)(rng);
}

Element random_element(std::mt19937_64& rng, const RandomStreamOptions& o) {
  if (o.element) return o.element(rng);
  return Element(Scalar{std::uniform_int_distribution<int64_t>(0, 99)(rng)});
}

TensorTree random_tree(std::mt19937_64& rng, const RandomStreamOptions& o, int level) {
  TensorTree t;
  if (level == 0) {
    t.leaf = true;
    t.elem = random_element(rng, o);
    return t;
  }
  const int n = random_len(rng, o);
  for (int i = 0; i < n; ++i) t.children.push_back(random_tree(rng, o, level - 1));
  return t;
}

// Emits a tree of level `level` closed at stop level `close` (0: no stop, only for leaves).
void emit(const TensorTree& t, int level, int close, std::vector<Token>& out) {
  if (t.leaf) {
    out.push_back(Token::e(t.elem));
    if (close) out.push_back(Token::s(uint8_t(close)));
    return;
  }
  if (t.children.empty()) {
    out.push_back(Token::s(uint8_t(close)));
    return;
  }
  for (size_t i = 0; i < t.children.size(); ++i)
    emit(t.children[i], level - 1, i + 1 == t.children.size() ? close : level - 1, out);
}

}  // namespace

std::vector<TensorTree> random_tensors(std::mt19937_64& rng, const RandomStreamOptions& o) {
  std::vector<TensorTree> top;
  const int n = random_len(rng, o);
  for (int i = 0; i < n; ++i) top.push_back(random_tree(rng, o, o.rank));
  return top;
}

std::vector<Token> tensors_to_tokens(const std::vector<TensorTree>& top, int rank) {
  std::vector<Token> out;
  for (const TensorTree& t : top) emit(t, rank, rank, out);
  out.push_back(Token::d());
  return out;
}

std::vector<Token> random_stream(std::mt19937_64& rng, const RandomStreamOptions& o) {
  return tensors_to_tokens(random_tensors(rng, o), o.rank);
}

}  // namespace stepsim
