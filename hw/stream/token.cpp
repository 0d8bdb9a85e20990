#include "hw/stream/token.h"

#include <cctype>
#include <sstream>
#include <stdexcept>

namespace stepsim {

int Selector::count() const {
  int n = 0;
  for (uint64_t x : w) n += __builtin_popcountll(x);
  return n;
}

std::vector<int> Selector::indices() const {
  std::vector<int> r;
  for (int i = 0; i < kMaxBits; ++i)
    if (test(i)) r.push_back(i);
  return r;
}

uint64_t Element::bytes() const {
  switch (v.index()) {
    case 0: return 8;
    case 1: return std::get<Tile>(v).bytes();
    case 2: return Selector::kMaxBits / 8;
    case 3: return 8;  // a reference travels as an address
    default: {
      uint64_t b = 0;
      for (const Element& e : *std::get<Tuple>(v)) b += e.bytes();
      return b;
    }
  }
}

std::string Element::to_string() const {
  switch (v.index()) {
    case 0: return std::to_string(scalar());
    case 1: return tile().to_string();
    case 2: {
      std::string s = "{";
      bool first = true;
      for (int i : selector().indices()) {
        if (!first) s += ",";
        s += std::to_string(i);
        first = false;
      }
      return s + "}";
    }
    case 3: {
      std::string s = "Buf[";
      const Buffer& b = *buffer();
      for (size_t i = 0; i < b.shape.size(); ++i) {
        if (i) s += "x";
        s += b.shape[i] < 0 ? std::string("?") : std::to_string(b.shape[i]);
      }
      return s + "]";
    }
    default: {
      std::string s = "(";
      bool first = true;
      for (const Element& e : *tuple()) {
        if (!first) s += ",";
        s += e.to_string();
        first = false;
      }
      return s + ")";
    }
  }
}

std::vector<Beat> to_beats(const std::vector<Token>& tokens) {
  std::vector<Beat> beats;
  bool open = false;  // the last beat can still take a stop (it has an element, no stop yet)
  bool done = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (done) throw std::invalid_argument("token " + std::to_string(i) + " follows the done token D");
    switch (t.kind) {
      case Token::kElem:
        beats.push_back(Beat::data(t.elem));
        open = true;
        break;
      case Token::kStop:
        if (t.level < 1 || t.level > kMaxStopLevel)
          throw std::invalid_argument("stop level S" + std::to_string(t.level) + " out of range 1.." +
                                      std::to_string(kMaxStopLevel));
        if (open)
          beats.back().stop = t.level;
        else
          beats.push_back(Beat::bare_stop(t.level));
        open = false;
        break;
      case Token::kDone:
        if (!beats.empty())
          beats.back().done = true;
        else
          beats.push_back(Beat::done_beat());
        done = true;
        open = false;
        break;
    }
  }
  if (!done) throw std::invalid_argument("stream does not end with the done token D");
  return beats;
}

std::vector<Token> to_tokens(const std::vector<Beat>& beats) {
  std::vector<Token> out;
  out.reserve(beats.size() * 2);
  for (const Beat& b : beats) {
    if (b.has_elem) out.push_back(Token::e(b.elem));
    if (b.stop) out.push_back(Token::s(b.stop));
    if (b.done) out.push_back(Token::d());
  }
  return out;
}

namespace {

[[noreturn]] void bad_word(const std::string& w, size_t pos, const std::string& why) {
  throw std::invalid_argument("cannot parse '" + w + "' at character " + std::to_string(pos) + ": " + why);
}

int64_t parse_int(const std::string& s, const std::string& word, size_t pos) {
  if (s.empty()) bad_word(word, pos, "expected an integer");
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) bad_word(word, pos, "expected an integer");
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) bad_word(word, pos, "expected an integer");
  return std::stoll(s);
}

// Splits a tuple body "a,T[2x2],(1,2)" at top-level commas.
std::vector<std::string> split_top(const std::string& s) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty() || !parts.empty()) parts.push_back(cur);
  return parts;
}

Element parse_element_at(const std::string& w, size_t pos) {
  if (w.empty()) bad_word(w, pos, "empty element");
  if (w[0] == '{') {
    if (w.back() != '}') bad_word(w, pos, "selector must end with '}'");
    Selector s;
    std::string body = w.substr(1, w.size() - 2);
    if (!body.empty()) {
      for (const std::string& p : split_top(body)) {
        if (p.empty()) continue;  // "{0,}" is a one-hot written with a trailing comma
        int64_t i = parse_int(p, w, pos);
        if (i < 0 || i >= Selector::kMaxBits)
          bad_word(w, pos, "selector index out of range 0.." + std::to_string(Selector::kMaxBits - 1));
        s.set(int(i));
      }
    }
    return Element(s);
  }
  if (w[0] == 'T' && w.size() > 1 && w[1] == '[') {
    if (w.back() != ']') bad_word(w, pos, "tile must be written T[RxC] or T[RxC:dtype]");
    std::string body = w.substr(2, w.size() - 3);
    DType dt = DType::BF16;
    size_t colon = body.find(':');
    if (colon != std::string::npos) {
      try {
        dt = parse_dtype(body.substr(colon + 1));
      } catch (const std::invalid_argument& e) {
        bad_word(w, pos, e.what());
      }
      body = body.substr(0, colon);
    }
    size_t x = body.find('x');
    if (x == std::string::npos) bad_word(w, pos, "tile must be written T[RxC]");
    int64_t r = parse_int(body.substr(0, x), w, pos), c = parse_int(body.substr(x + 1), w, pos);
    if (r < 0 || c < 0) bad_word(w, pos, "tile dimensions must be non-negative");
    return Element(shape_tile(uint32_t(r), uint32_t(c), dt));
  }
  if (w[0] == '(') {
    if (w.back() != ')') bad_word(w, pos, "tuple must end with ')'");
    auto v = std::make_shared<std::vector<Element>>();
    for (const std::string& p : split_top(w.substr(1, w.size() - 2))) v->push_back(parse_element_at(p, pos));
    return Element(Tuple(v));
  }
  return Element(Scalar{parse_int(w, w, pos)});
}

}  // namespace

Element parse_element(const std::string& word) { return parse_element_at(word, 0); }

std::vector<Token> parse_tokens(const std::string& text) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t start = i;
    int depth = 0;
    while (i < text.size() && (depth > 0 || !std::isspace(static_cast<unsigned char>(text[i])))) {
      char c = text[i];
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      ++i;
    }
    std::string w = text.substr(start, i - start);
    if (w == "D") {
      out.push_back(Token::d());
    } else if (w.size() >= 2 && w[0] == 'S' && std::isdigit(static_cast<unsigned char>(w[1]))) {
      int64_t l = parse_int(w.substr(1), w, start);
      if (l < 1 || l > kMaxStopLevel)
        bad_word(w, start, "stop level out of range 1.." + std::to_string(kMaxStopLevel));
      out.push_back(Token::s(uint8_t(l)));
    } else {
      out.push_back(Token::e(parse_element_at(w, start)));
    }
  }
  return out;
}

std::string format_tokens(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) {
    if (!s.empty()) s += ' ';
    switch (t.kind) {
      case Token::kElem: s += t.elem.to_string(); break;
      case Token::kStop: s += "S" + std::to_string(t.level); break;
      case Token::kDone: s += "D"; break;
    }
  }
  return s;
}

std::string ObservedShape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += dims[i] < 0 ? std::string("ragged") : std::to_string(dims[i]);
  }
  return s + "]";
}

ObservedShape observe_shape(const std::vector<Token>& tokens, int rank) {
  if (rank < 0 || rank > kMaxStopLevel) throw std::invalid_argument("rank out of range");
  // cur[j]: completed level-(j-1) units (elements for j = 0) in the open level-j unit.
  std::vector<int64_t> cur(size_t(rank) + 1, 0), size(size_t(rank) + 1, -2);
  auto record = [&](int j, int64_t n) {
    if (size[size_t(j)] == -2)
      size[size_t(j)] = n;
    else if (size[size_t(j)] != n)
      size[size_t(j)] = -1;
  };
  bool done = false;
  for (const Token& t : tokens) {
    if (done) throw std::invalid_argument("tokens after D");
    if (t.kind == Token::kElem) {
      ++cur[0];
    } else if (t.kind == Token::kStop) {
      if (t.level > rank)
        throw std::invalid_argument("stop S" + std::to_string(t.level) + " exceeds the stream's rank " +
                                    std::to_string(rank));
      for (int j = 0; j < t.level; ++j) {
        record(j, cur[size_t(j)]);
        cur[size_t(j)] = 0;
        ++cur[size_t(j) + 1];
      }
    } else {
      done = true;
      for (int j = 0; j < rank; ++j)
        if (cur[size_t(j)] != 0)
          throw std::invalid_argument("stream ends with an unterminated dimension (missing S" +
                                      std::to_string(rank) + " before D)");
    }
  }
  if (!done) throw std::invalid_argument("stream does not end with D");
  ObservedShape s;
  s.dims.push_back(cur[size_t(rank)]);
  for (int j = rank - 1; j >= 0; --j) s.dims.push_back(size[size_t(j)] == -2 ? 0 : size[size_t(j)]);
  return s;
}

}  // namespace stepsim
