#include "hw/stream/token.h"

#include <cctype>
#include <cstdint>
#include <sstream>
#include <stdexcept>

#include "hw/stream/number_text.h"

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
    case 0:
      return 8;
    case 1:
      return std::get<Tile>(v).bytes();
    case 2:
      return Selector::kMaxBits / 8;
    case 3:
      return 8;  // a reference travels as an address
    default: {
      uint64_t b = 0;
      for (const Element& e : *std::get<Tuple>(v)) b += e.bytes();
      return b;
    }
  }
}

namespace {

// The notation of e; a buffer's contents only when `contents` (messages leave them out).
std::string element_text(const Element& e, bool contents) {
  switch (e.v.index()) {
    case 0:
      return std::to_string(e.scalar());
    case 1:
      return e.tile().to_string();
    case 2: {
      std::string s = "{";
      bool first = true;
      for (int i : e.selector().indices()) {
        if (!first) s += ",";
        s += std::to_string(i);
        first = false;
      }
      return s + "}";
    }
    case 3: {
      std::string s = "Buf[";
      const Buffer& b = *e.buffer();
      for (size_t i = 0; i < b.shape.size(); ++i) {
        if (i) s += "x";
        s += b.shape[i] < 0 ? std::string("?") : std::to_string(b.shape[i]);
      }
      if (contents) return s + "](" + format_beats(b.beats) + ")";
      uint64_t elems = 0;
      for (const Beat& x : b.beats) elems += x.has_elem;
      return s + "](" + std::to_string(elems) + (elems == 1 ? " element)" : " elements)");
    }
    default: {
      std::string s = "(";
      bool first = true;
      for (const Element& m : *e.tuple()) {
        if (!first) s += ",";
        s += element_text(m, contents);
        first = false;
      }
      return s + ")";
    }
  }
}

std::string token_text(const Token& t) { return format_tokens({t}); }

[[noreturn]] void bad_token(const std::vector<Token>& tokens, size_t i, const std::string& why) {
  throw std::invalid_argument("token " + std::to_string(i) + " '" + token_text(tokens[i]) + "': " + why);
}

}  // namespace

std::string Element::to_string() const { return element_text(*this, true); }
std::string Element::brief() const { return element_text(*this, false); }

// Checks the well-formedness rules of token.h while it converts.
std::vector<Beat> to_beats(const std::vector<Token>& tokens) {
  // The rank first (the highest stop before D), so a bad level is named before anything it
  // would make look wrong.
  int rank = 0;
  size_t rank_at = 0;
  for (size_t i = 0; i < tokens.size() && tokens[i].kind != Token::kDone; ++i) {
    const Token& t = tokens[i];
    if (t.kind != Token::kStop) continue;
    if (t.level < 1 || t.level > kMaxStopLevel)
      bad_token(tokens, i, "stop level out of range 1.." + std::to_string(kMaxStopLevel));
    if (t.level > rank) {
      rank = t.level;
      rank_at = i;
    }
  }
  std::vector<Beat> beats;
  bool open = false;  // the last beat can still take a stop (it has an element, no stop yet)
  size_t done_at = 0;
  bool done = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (done) bad_token(tokens, i, "follows the done token D (token " + std::to_string(done_at) + ")");
    switch (t.kind) {
      case Token::kElem:
        beats.push_back(Beat::data(t.elem));
        open = true;
        break;
      case Token::kStop:
        if (open)
          beats.back().stop = t.level;
        else
          beats.push_back(Beat::bare_stop(t.level));
        open = false;
        break;
      case Token::kDone: {
        const std::string closing = "S" + std::to_string(rank);
        if (i > 0 && rank > 0 && !(tokens[i - 1].kind == Token::kStop && tokens[i - 1].level == rank))
          bad_token(tokens, i,
                    "the stream ends inside an open dimension: its rank is " + std::to_string(rank) + " (" + closing +
                        " at token " + std::to_string(rank_at) + "), so it must end with " + closing +
                        " D, but token " + std::to_string(i - 1) + " before D is '" + token_text(tokens[i - 1]) + "'");
        if (!beats.empty())
          beats.back().done = true;
        else
          beats.push_back(Beat::done_beat());
        done = true;
        done_at = i;
        open = false;
        break;
      }
    }
  }
  if (!done)
    throw std::invalid_argument(tokens.empty()
                                    ? "the stream is empty: it needs at least the done token D"
                                    : "the stream does not end with the done token D (after token " +
                                          std::to_string(tokens.size() - 1) + " '" + token_text(tokens.back()) + "')");
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

// A decimal integer with an optional sign (the notation has no hexadecimal).
int64_t parse_int(const std::string& s, const std::string& word, size_t pos) {
  if (s.empty()) bad_word(word, pos, "expected an integer");
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) bad_word(word, pos, "expected an integer");
  for (size_t k = i; k < s.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) bad_word(word, pos, "expected an integer");
  int64_t v = 0;
  if (!parse_int64(s, v))
    bad_word(word, pos,
             "number " + s + " out of range (a 64-bit integer: " + IntRange{INT64_MIN, INT64_MAX}.text() + ")");
  return v;
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

std::vector<Token> parse_tokens_at(const std::string& text, size_t offset, int nesting);

// "Buf[2x3](1 2 3 S1 4 5 6 S2)": the shape (outermost first, '?' ragged) and the stored stream,
// which closes with S<rank>, rank = the number of dimensions (as Bufferize stores it). The shape
// must be the one the contents have: it is what Streamify's affine reads go by.
BufferRef parse_buffer(const std::string& w, size_t pos, int depth) {
  const size_t close = w.find(']');
  if (close == std::string::npos || close + 1 >= w.size() || w[close + 1] != '(' || w.back() != ')')
    bad_word(w, pos, "a buffer is written Buf[DIMS](CONTENTS), e.g. Buf[2x3](1 2 3 S1 4 5 6 S2)");
  std::vector<int64_t> shape;
  const std::string dims = w.substr(4, close - 4);
  for (size_t a = 0; a <= dims.size();) {
    size_t b = dims.find('x', a);
    if (b == std::string::npos) b = dims.size();
    const std::string d = dims.substr(a, b - a);
    shape.push_back(d == "?" ? -1 : parse_int(d, w, pos));
    if (shape.back() < -1 || shape.back() > int64_t(kMaxStreamBeats))
      bad_word(w, pos, "buffer dimension " + d + " out of range 0.." + std::to_string(kMaxStreamBeats) + " (or ?)");
    a = b + 1;
  }
  const int rank = int(shape.size());
  if (rank > kMaxStopLevel) bad_word(w, pos, "a buffer has at most " + std::to_string(kMaxStopLevel) + " dimensions");
  const size_t body_at = pos + close + 2;
  std::vector<Token> contents = parse_tokens_at(w.substr(close + 2, w.size() - close - 3), body_at, depth);
  for (const Token& t : contents)
    if (t.kind == Token::kDone) bad_word(w, pos, "a buffer's contents have no done token D");
  const std::string closing = "S" + std::to_string(rank);
  for (size_t i = 0; i < contents.size(); ++i) {
    const Token& t = contents[i];
    const bool last = i + 1 == contents.size();
    if ((last && !(t.kind == Token::kStop && t.level == rank)) || (!last && t.kind == Token::kStop && t.level >= rank))
      bad_word(w, pos,
               "the contents of a buffer of " + std::to_string(rank) + " dimensions are one tensor: they end with " +
                   closing + " and have no other stop " + closing + " or above");
  }
  // An empty buffer is what Bufferize stores for a bare closing stop: its shape is that stop's.
  std::vector<Token> closed = contents.empty() ? std::vector<Token>{Token::s(uint8_t(rank))} : contents;
  closed.push_back(Token::d());
  std::vector<int64_t> seen = observe_shape(closed, rank).dims;
  seen.erase(seen.begin());  // the one tensor the buffer holds
  if (seen != shape) {
    auto text = [](const std::vector<int64_t>& v) {
      std::string s;
      for (int64_t d : v) s += (s.empty() ? "" : "x") + (d < 0 ? std::string("?") : std::to_string(d));
      return s;
    };
    bad_word(w, pos, "the contents have shape [" + text(seen) + "], not [" + text(shape) + "]");
  }
  auto buf = std::make_shared<Buffer>();
  contents.push_back(Token::d());
  buf->beats = to_beats(contents);
  if (buf->beats.back().has_elem || buf->beats.back().stop)
    buf->beats.back().done = false;
  else
    buf->beats.pop_back();  // the bare done of empty contents
  for (const Beat& b : buf->beats) buf->bytes += b.has_elem ? b.elem.bytes() : 0;
  buf->shape = shape;
  buf->rank = uint32_t(rank);
  return buf;
}

// `depth`: the tuples and buffers around this element.
Element parse_element_at(const std::string& w, size_t pos, int depth) {
  if (w.empty()) bad_word(w, pos, "empty element");
  if ((w[0] == '(' || w.rfind("Buf[", 0) == 0) && depth >= kMaxElementDepth)
    bad_word(w.substr(0, 40) + (w.size() > 40 ? "..." : ""), pos,
             "tuples and buffers nest at most " + std::to_string(kMaxElementDepth) + " deep");
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
    if (r < 0 || c < 0 || r > kMaxTileDim || c > kMaxTileDim)
      bad_word(w, pos, "tile dimensions must be in 0.." + std::to_string(kMaxTileDim));
    return Element(shape_tile(uint32_t(r), uint32_t(c), dt));
  }
  if (w.rfind("Buf[", 0) == 0) return Element(parse_buffer(w, pos, depth + 1));
  if (w[0] == '(') {
    if (w.back() != ')') bad_word(w, pos, "tuple must end with ')'");
    auto v = std::make_shared<std::vector<Element>>();
    for (const std::string& p : split_top(w.substr(1, w.size() - 2))) v->push_back(parse_element_at(p, pos, depth + 1));
    return Element(Tuple(v));
  }
  return Element(Scalar{parse_int(w, w, pos)});
}

}  // namespace

Element parse_element(const std::string& word) { return parse_element_at(word, 0, 0); }

std::vector<Token> parse_tokens(const std::string& text) { return parse_tokens_at(text, 0, 0); }

namespace {

// parse_tokens of text that starts at character `offset` of the text the user wrote (a buffer's
// contents), so that positions in errors are the user's.
std::vector<Token> parse_tokens_at(const std::string& text, size_t offset, int nesting) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t start = i;
    int brackets = 0;
    while (i < text.size() && (brackets > 0 || !std::isspace(static_cast<unsigned char>(text[i])))) {
      char c = text[i];
      if (c == '(' || c == '[' || c == '{') ++brackets;
      if (c == ')' || c == ']' || c == '}') --brackets;
      ++i;
    }
    std::string w = text.substr(start, i - start);
    start += offset;
    if (w == "D") {
      out.push_back(Token::d());
    } else if (w.size() >= 2 && w[0] == 'S' && std::isdigit(static_cast<unsigned char>(w[1]))) {
      int64_t l = parse_int(w.substr(1), w, start);
      if (l < 1 || l > kMaxStopLevel) bad_word(w, start, "stop level out of range 1.." + std::to_string(kMaxStopLevel));
      out.push_back(Token::s(uint8_t(l)));
    } else {
      out.push_back(Token::e(parse_element_at(w, start, nesting)));
    }
  }
  return out;
}

}  // namespace

std::string format_tokens(const std::vector<Token>& tokens) {
  std::string s;
  for (const Token& t : tokens) {
    if (!s.empty()) s += ' ';
    switch (t.kind) {
      case Token::kElem:
        s += t.elem.to_string();
        break;
      case Token::kStop:
        s += "S" + std::to_string(t.level);
        break;
      case Token::kDone:
        s += "D";
        break;
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
          throw std::invalid_argument("stream ends with an unterminated dimension (missing S" + std::to_string(rank) +
                                      " before D)");
    }
  }
  if (!done) throw std::invalid_argument("stream does not end with D");
  ObservedShape s;
  s.dims.push_back(cur[size_t(rank)]);
  for (int j = rank - 1; j >= 0; --j) s.dims.push_back(size[size_t(j)] == -2 ? 0 : size[size_t(j)]);
  return s;
}

}  // namespace stepsim
