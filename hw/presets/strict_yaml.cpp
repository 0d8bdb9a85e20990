#include "hw/presets/strict_yaml.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "hw/stream/number_text.h"

namespace stepsim {

namespace {

std::string position(const std::string& source, const YAML::Mark& m) {
  if (m.is_null()) return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

}  // namespace

std::string at(const std::string& source, const YAML::Node& n) { return position(source, n.Mark()); }

namespace {

// Reads the document as events, before any node is built, and refuses what no stepsim file needs
// and what makes a small file expensive: anchors and aliases (a recursive alias `a: &a [*a]` has no
// end, and "billion laughs" aliases expand exponentially for every walk over the nodes) and
// nesting deeper than kMaxYamlDepth (every reader of the nodes recurses).
class ShapeGuard : public YAML::EventHandler {
 public:
  explicit ShapeGuard(const std::string& source) : source_(source) {}
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { check_anchor(m, a); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override {
    throw std::invalid_argument(position(source_, m) +
                                ": YAML aliases (*name) are not allowed here: write the value out");
  }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string&) override {
    check_anchor(m, a);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override {
    open(m, a);
  }
  void OnMapEnd() override { --depth_; }

 private:
  void check_anchor(const YAML::Mark& m, YAML::anchor_t a) const {
    if (a != YAML::NullAnchor)
      throw std::invalid_argument(position(source_, m) +
                                  ": YAML anchors (&name) and aliases are not allowed here: write the value out");
  }
  void open(const YAML::Mark& m, YAML::anchor_t a) {
    check_anchor(m, a);
    if (++depth_ > kMaxYamlDepth)
      throw std::invalid_argument(position(source_, m) + ": lists and mappings nested more than " +
                                  std::to_string(kMaxYamlDepth) + " deep");
  }
  const std::string& source_;
  int depth_ = 0;
};

void check_shape(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  ShapeGuard guard(source);
  // The first document only, as YAML::Load reads only that one. (On some malformed input
  // yaml-cpp 0.7 reports empty documents for ever: a loop over them would not end.)
  parser.HandleNextDocument(guard);
}

YAML::Node load_yaml(const std::string& text, const std::string& source) {
  try {
    check_shape(text, source);
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
