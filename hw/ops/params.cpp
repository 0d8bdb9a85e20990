#include "hw/ops/params.h"

#include <sstream>
#include <stdexcept>

namespace stepsim {

const char* param_type_name(ParamSpec::Type t) {
  switch (t) {
    case ParamSpec::Type::kInt:
      return "int";
    case ParamSpec::Type::kIntList:
      return "int list";
    case ParamSpec::Type::kString:
      return "string";
    case ParamSpec::Type::kBool:
      return "bool";
  }
  return "?";
}

std::string allowed_values(const ParamSpec& p) {
  const bool integer = p.type == ParamSpec::Type::kInt || p.type == ParamSpec::Type::kIntList;
  return integer ? p.range.text() : "";
}

namespace {
std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

std::vector<int64_t> parse_int_list(const std::string& text) {
  std::string t = trim(text);
  if (!t.empty() && t.front() == '[') {
    if (t.back() != ']') throw std::invalid_argument("unterminated list '" + text + "'");
    t = t.substr(1, t.size() - 2);
  }
  std::vector<int64_t> out;
  if (trim(t).empty()) return out;
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t v;
    if (!parse_int64(trim(item), v)) throw std::invalid_argument("'" + trim(item) + "' is not a 64-bit integer");
    out.push_back(v);
  }
  return out;
}

Params::Params(std::string op_name, std::string node_name, const std::vector<ParamSpec>* specs,
               std::map<std::string, std::string> values)
    : op_(std::move(op_name)), node_(std::move(node_name)), specs_(specs), values_(std::move(values)) {
  for (const auto& kv : values_) {
    bool known = false;
    for (const ParamSpec& s : *specs_) known |= s.name == kv.first;
    if (!known) {
      std::string names;
      for (const ParamSpec& s : *specs_) names += (names.empty() ? "" : ", ") + s.name;
      throw std::invalid_argument("node '" + node_ + "' (" + op_ + "): unknown parameter '" + kv.first + "'; " + op_ +
                                  " takes: " + (names.empty() ? "no parameters" : names));
    }
  }
  for (const ParamSpec& s : *specs_) {
    if (s.required && !values_.count(s.name))
      throw std::invalid_argument("node '" + node_ + "' (" + op_ + "): missing required parameter '" + s.name + "' (" +
                                  s.doc + ")");
    // Validate types and ranges eagerly (defaults too) so bad values fail at load, before
    // anything is sized from them, not mid-simulation.
    if (values_.count(s.name) || !s.required) {
      switch (s.type) {
        case ParamSpec::Type::kInt:
          get_int(s.name);
          break;
        case ParamSpec::Type::kIntList:
          get_ints(s.name);
          break;
        case ParamSpec::Type::kBool:
          get_bool(s.name);
          break;
        case ParamSpec::Type::kString:
          break;
      }
    }
  }
}

const ParamSpec& Params::spec(const std::string& k) const {
  for (const ParamSpec& s : *specs_)
    if (s.name == k) return s;
  throw std::logic_error(op_ + " has no parameter spec '" + k + "'");
}

std::string Params::raw(const std::string& k) const {
  auto it = values_.find(k);
  if (it != values_.end()) return it->second;
  return spec(k).default_value;
}

void Params::fail(const std::string& k, const std::string& why) const {
  throw std::invalid_argument("node '" + node_ + "' (" + op_ + "): parameter '" + k + "' " + why);
}

int64_t Params::get_int(const std::string& k) const {
  int64_t v;
  std::string r = trim(raw(k));
  const IntRange& range = spec(k).range;
  if (!parse_int64(r, v)) fail(k, "expects an integer in " + range.text() + ", got '" + r + "'");
  if (!range.contains(v)) fail(k, "is " + r + ", outside the allowed range " + range.text());
  return v;
}

std::vector<int64_t> Params::get_ints(const std::string& k) const {
  std::vector<int64_t> v;
  const IntRange& range = spec(k).range;
  try {
    v = parse_int_list(raw(k));
  } catch (const std::invalid_argument& e) {
    fail(k, "expects a list of integers in " + range.text() + ": " + e.what());
  }
  for (size_t i = 0; i < v.size(); ++i)
    if (!range.contains(v[i]))
      fail(k, "entry " + std::to_string(i) + " is " + std::to_string(v[i]) + ", outside the allowed range " +
                  range.text());
  return v;
}

std::string Params::get_string(const std::string& k) const { return raw(k); }

bool Params::get_bool(const std::string& k) const {
  std::string r = trim(raw(k));
  if (r == "true" || r == "1") return true;
  if (r == "false" || r == "0") return false;
  fail(k, "expects true or false, got '" + r + "'");
}

}  // namespace stepsim
