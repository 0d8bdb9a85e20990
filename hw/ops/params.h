// Typed, documented operator parameters. Values arrive as text (YAML scalars/lists, CLI
// `--param k=v`) and are parsed against the operator's ParamSpec list, so an unknown name, a
// value of the wrong type or a value outside the parameter's range is a clear error naming the
// operator, the node, the parameter, the value and the allowed range. Integers are read as
// 64-bit decimal (or 0x hexadecimal) numbers: nothing is cut to 32 bits.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hw/stream/number_text.h"

namespace stepsim {

// The range of a parameter that declares none: a size or count. 2^40 is far above anything the
// fabric holds and keeps products of a few such values inside 64 bits where they are checked.
constexpr int64_t kMaxParamValue = int64_t(1) << 40;
constexpr IntRange kCountRange{0, kMaxParamValue};
constexpr IntRange kPositiveRange{1, kMaxParamValue};
// Stream ranks and stop levels: the beat's stop field has 4 bits (S1..S15).
constexpr IntRange kRankRange{0, 15};

struct ParamSpec {
  enum class Type { kInt, kIntList, kString, kBool };
  std::string name;
  Type type;
  std::string default_value;  // text; empty with required=true means "must be given"
  std::string doc;
  bool required = false;
  IntRange range = kCountRange;  // kInt and kIntList
};

// A parameter's name with its type, declared once (the operators': hw/ops/op_params.h) and used
// both to declare the parameter (param_spec) and to read it (Params::get), so no reader spells
// the key again or reads it as another type.
template <class T>
struct ParamKey {
  const char* name;
};
using IntParam = ParamKey<int64_t>;
using IntListParam = ParamKey<std::vector<int64_t>>;
using StringParam = ParamKey<std::string>;
using BoolParam = ParamKey<bool>;

template <class T>
constexpr ParamSpec::Type param_type();
template <>
constexpr ParamSpec::Type param_type<int64_t>() {
  return ParamSpec::Type::kInt;
}
template <>
constexpr ParamSpec::Type param_type<std::vector<int64_t>>() {
  return ParamSpec::Type::kIntList;
}
template <>
constexpr ParamSpec::Type param_type<std::string>() {
  return ParamSpec::Type::kString;
}
template <>
constexpr ParamSpec::Type param_type<bool>() {
  return ParamSpec::Type::kBool;
}

// The declaration of parameter `key` in a descriptor: its type comes from the key.
template <class T>
ParamSpec param_spec(ParamKey<T> key, std::string default_value, std::string doc, bool required = false,
                     IntRange range = kCountRange) {
  return ParamSpec{key.name, param_type<T>(), std::move(default_value), std::move(doc), required, range};
}

const char* param_type_name(ParamSpec::Type t);
// The allowed values for the docs: "0..15" for integers and integer lists, "" otherwise.
std::string allowed_values(const ParamSpec& p);

class Params {
 public:
  Params() = default;
  Params(std::string op_name, std::string node_name, const std::vector<ParamSpec>* specs,
         std::map<std::string, std::string> values);

  bool has(const std::string& k) const { return values_.count(k) > 0; }
  template <class T>
  bool has(ParamKey<T> k) const {
    return has(std::string(k.name));
  }
  // The value of the parameter `k` names, read as its key's type.
  int64_t get(IntParam k) const { return get_int(k.name); }
  std::vector<int64_t> get(IntListParam k) const { return get_ints(k.name); }
  std::string get(StringParam k) const { return get_string(k.name); }
  bool get(BoolParam k) const { return get_bool(k.name); }
  int64_t get_int(const std::string& k) const;
  std::vector<int64_t> get_ints(const std::string& k) const;
  std::string get_string(const std::string& k) const;
  bool get_bool(const std::string& k) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  const ParamSpec& spec(const std::string& k) const;
  std::string raw(const std::string& k) const;
  [[noreturn]] void fail(const std::string& k, const std::string& why) const;

  std::string op_, node_;
  const std::vector<ParamSpec>* specs_ = nullptr;
  std::map<std::string, std::string> values_;
};

// Parses "[1, 2, 3]", "1,2,3" or "7" into integers; throws std::invalid_argument.
std::vector<int64_t> parse_int_list(const std::string& text);

}  // namespace stepsim
