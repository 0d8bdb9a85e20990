// Typed, documented operator parameters. Values arrive as text (YAML scalars/lists, CLI
// `--param k=v`) and are parsed against the operator's ParamSpec list, so an unknown name or a
// value of the wrong type is a clear error naming the operator and the parameter.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace stepsim {

struct ParamSpec {
  enum class Type { kInt, kIntList, kString, kBool };
  std::string name;
  Type type;
  std::string default_value;  // text; empty with required=true means "must be given"
  std::string doc;
  bool required = false;
};

const char* param_type_name(ParamSpec::Type t);

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
