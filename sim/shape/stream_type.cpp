#include "sim/shape/stream_type.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <tuple>

namespace stepsim::shape {

using namespace GiNaC;

namespace {

DECLARE_FUNCTION_2P(ceil_div_fn)

ex ceil_div_eval(const ex& a, const ex& b) {
  if (is_a<numeric>(a) && is_a<numeric>(b)) {
    const numeric& na = ex_to<numeric>(a);
    const numeric& nb = ex_to<numeric>(b);
    if (na.is_integer() && nb.is_integer() && nb.is_positive()) return iquo(na + nb - 1, nb);
  }
  if (b.is_equal(1)) return a;
  if (a.is_zero()) return 0;
  return ceil_div_fn(a, b).hold();
}

REGISTER_FUNCTION(ceil_div_fn, eval_func(ceil_div_eval).set_name("ceil_div"))

DECLARE_FUNCTION_2P(max_size_fn)

ex max_size_eval(const ex& a, const ex& b) {
  if (is_a<numeric>(a) && is_a<numeric>(b)) return ex_to<numeric>(a) < ex_to<numeric>(b) ? b : a;
  if ((a - b).expand().is_zero()) return a;
  return max_size_fn(a, b).hold();
}

REGISTER_FUNCTION(max_size_fn, eval_func(max_size_eval).set_name("max_size"))

std::string dims_str(const std::vector<Dim>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += to_string(dims[i].size);
    if (dims[i].kind == DimKind::Ragged) s += "~";
  }
  return s + "]";
}

}  // namespace

ex ceil_div(const ex& a, const ex& b) { return ceil_div_fn(a, b); }
ex max_size(const ex& a, const ex& b) { return max_size_fn(a, b); }

ex stream_bytes(const StreamType& t) {
  if (t.elem.kind == ElemType::Tile && t.elem.has_rows_mean)
    return t.card() * t.elem.rows_mean * t.elem.cols * int64_t(dtype_bytes(t.elem.dtype));
  return t.card() * t.elem.bytes();
}

// GiNaC orders the terms of a sum and the factors of a product by hash values that depend on
// where objects sit in memory, so its printed form can change from run to run. Printing sorts
// them by their own text, which makes every printed expression (reports, messages) deterministic.
std::string to_string(const ex& e) {
  auto plain = [](const ex& x) {
    std::ostringstream o;
    o << x;
    return o.str();
  };
  if (is_a<add>(e)) {
    // Constants last; the other terms by their symbolic part, then by coefficient.
    std::vector<std::tuple<bool, std::string, std::string>> terms;
    for (size_t i = 0; i < e.nops(); ++i) {
      const ex t = e.op(i);
      ex sym = t;
      if (is_a<mul>(t))
        for (size_t k = 0; k < t.nops(); ++k)
          if (is_a<numeric>(t.op(k))) sym = t / t.op(k);
      terms.emplace_back(is_a<numeric>(t), to_string(sym), to_string(t));
    }
    std::sort(terms.begin(), terms.end());
    std::string s;
    for (const auto& term : terms) {
      const std::string& t = std::get<2>(term);
      s += s.empty() ? t : (t[0] == '-' ? t : "+" + t);
    }
    return s;
  }
  if (is_a<mul>(e)) {
    std::string coeff;
    std::vector<std::string> factors;
    for (size_t i = 0; i < e.nops(); ++i) {
      const ex f = e.op(i);
      if (is_a<numeric>(f))
        coeff = plain(f);
      else
        factors.push_back(is_a<add>(f) ? "(" + to_string(f) + ")" : to_string(f));
    }
    std::sort(factors.begin(), factors.end());
    std::string s = coeff == "-1" ? "-" : coeff.empty() ? "" : coeff + "*";
    for (size_t i = 0; i < factors.size(); ++i) s += (i ? "*" : "") + factors[i];
    return s;
  }
  if (is_a<function>(e)) {
    std::string s = ex_to<function>(e).get_name() + "(";
    for (size_t i = 0; i < e.nops(); ++i) s += (i ? "," : "") + to_string(e.op(i));
    return s + ")";
  }
  if (is_a<power>(e)) {
    const ex b = e.op(0), x = e.op(1);
    const std::string bs =
        is_a<symbol>(b) || is_a<numeric>(b) || is_a<function>(b) ? to_string(b) : "(" + to_string(b) + ")";
    if (x.is_equal(-1)) return "1/" + bs;
    return bs + "^" + (is_a<numeric>(x) || is_a<symbol>(x) ? to_string(x) : "(" + to_string(x) + ")");
  }
  return plain(e);
}

ex ElemType::bytes() const {
  switch (kind) {
    case Tile:
      return rows * cols * int64_t(dtype_bytes(dtype));
    case Scalar:
      return 8;
    case Selector:
      return 32;
    case Buffer:
      return 8;
    case Tuple: {
      ex s = 0;
      for (const ElemType& m : members) s += m.bytes();
      return s;
    }
  }
  return 0;
}

std::string ElemType::str() const {
  switch (kind) {
    case Tile:
      return "T[" + to_string(rows) + "x" + to_string(cols) + ":" + dtype_name(dtype) + "]" +
             (has_rows_mean ? "{mean rows " + to_string(rows_mean) + "}" : "");
    case Scalar:
      return "scalar";
    case Selector:
      return "selector";
    case Buffer:
      return "Buf" + dims_str(buffer_dims) + " of " + (members.empty() ? "?" : members[0].str());
    case Tuple: {
      std::string s = "(";
      for (size_t i = 0; i < members.size(); ++i) s += (i ? ", " : "") + members[i].str();
      return s + ")";
    }
  }
  return "?";
}

ex card_of(const std::vector<Dim>& dims) {
  ex c = 1;
  for (const Dim& d : dims) c = d.kind == DimKind::Ragged ? d.size : c * d.size;
  return c;
}

ex StreamType::card() const { return card_of(dims); }

std::string StreamType::str() const { return dims_str(dims) + " of " + elem.str(); }

bool same_size(const ex& a, const ex& b) { return (a - b).expand().is_zero(); }

std::string difference(const ElemType& a, const ElemType& b) {
  if (a.kind != b.kind || (a.kind == ElemType::Tile && (!same_size(a.rows, b.rows) || !same_size(a.cols, b.cols) ||
                                                        a.dtype != b.dtype || a.has_rows_mean != b.has_rows_mean ||
                                                        (a.has_rows_mean && !same_size(a.rows_mean, b.rows_mean)))))
    return "element " + a.str() + " vs " + b.str();
  if (a.kind == ElemType::Tuple || a.kind == ElemType::Buffer) {
    if (a.members.size() != b.members.size()) return "element " + a.str() + " vs " + b.str();
    for (size_t i = 0; i < a.members.size(); ++i)
      if (!difference(a.members[i], b.members[i]).empty()) return "element " + a.str() + " vs " + b.str();
    if (a.kind == ElemType::Buffer) {
      StreamType sa{a.buffer_dims, {}}, sb{b.buffer_dims, {}};
      if (!difference(sa, sb).empty()) return "element " + a.str() + " vs " + b.str();
    }
  }
  return "";
}

std::string difference(const StreamType& a, const StreamType& b) {
  if (a.rank() != b.rank()) return "rank " + std::to_string(a.rank()) + " vs " + std::to_string(b.rank());
  for (size_t k = 0; k < a.rank(); ++k) {
    const Dim &x = a.dim(k), &y = b.dim(k);
    if (!same_size(x.size, y.size))
      return "dimension " + std::to_string(k) + ": " + to_string(x.size) + " vs " + to_string(y.size);
  }
  return difference(a.elem, b.elem);
}

}  // namespace stepsim::shape
