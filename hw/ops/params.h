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

const char* param_type_name(ParamSpec::Type t);
// The allowed values for the docs: "0..15" for integers and integer lists, "" otherwise.
std::string allowed_values(const ParamSpec& p);

class Params {
 public:
  Params() = default;
  Params(std::string op_name, std::string node_name, const std::vector<ParamSpec>* specs,
         std::map<std::string, std::string> values);

  bool has(const std::string& k) const { return values_.count(k) > 0; }
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
