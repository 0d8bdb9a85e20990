#include "hw/presets/strict_yaml.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "hw/stream/number_text.h"

namespace stepsim {

std::string at(const std::string& source, const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

namespace {

YAML::Node load_yaml(const std::string& text, const std::string& source) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) throw std::invalid_argument(source + ": " + e.msg);
    throw std::invalid_argument(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                                std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

}  // namespace

std::string kind_name(const YAML::Node& n) {
  if (n.IsMap()) return "a mapping";
  if (n.IsSequence()) return "a list";
  if (n.IsNull()) return "nothing";
  return "'" + n.Scalar() + "'";
}

std::string scalar(const YAML::Node& n, const std::string& source, const std::string& key) {
  if (!n.IsScalar())
    throw std::invalid_argument(at(source, n) + ": " + key + " must be a single value, got " + kind_name(n));
  return n.Scalar();
}

int64_t integer(const YAML::Node& n, const std::string& source, const std::string& key, IntRange range) {
  const std::string text = scalar(n, source, key);
  int64_t v = 0;
  if (!parse_int64(text, v) || !range.contains(v))
    throw std::invalid_argument(at(source, n) + ": " + key + " must be an integer in " + range.text() + ", got '" +
                                text + "'");
  return v;
}

void check_map(const YAML::Node& n, const std::string& source, const std::string& key,
               const std::vector<std::string>& allowed) {
  if (!n.IsMap()) throw std::invalid_argument(at(source, n) + ": " + key + " must be a mapping, got " + kind_name(n));
  if (allowed.empty()) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string k = scalar(it->first, source, key + " key");
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string names;
      for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
      throw std::invalid_argument(at(source, it->first) + ": unknown key '" + k + "' in " + key + " (expected " +
                                  names + ")");
    }
  }
}

namespace {

void reject_duplicate_keys(const YAML::Node& n, const std::string& source) {
  if (n.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.IsScalar()) {
        const auto [prev, fresh] = seen.emplace(it->first.Scalar(), it->first.Mark());
        if (!fresh)
          throw std::invalid_argument(at(source, it->first) + ": duplicate key '" + it->first.Scalar() +
                                      "' (first given at line " + std::to_string(prev->second.line + 1) + ")");
      }
      reject_duplicate_keys(it->second, source);
    }
  } else if (n.IsSequence()) {
    for (const YAML::Node& e : n) reject_duplicate_keys(e, source);
  }
}

}  // namespace

YAML::Node load_strict(const std::string& text, const std::string& source) {
  YAML::Node root = load_yaml(text, source);
  reject_duplicate_keys(root, source);
  return root;
}

}  // namespace stepsim
