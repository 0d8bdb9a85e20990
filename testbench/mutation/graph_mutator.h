// Mutation testing of the graph loader: the example graphs are read into an ordered tree (our
// own, so it can hold what yaml-cpp would not emit: a repeated key), mutated one edit at a time,
// written back as YAML text and run through the real `stepsim run`. Every edit belongs to a
// class with an expected outcome:
//
//   neutral       every mapping's entries shuffled, scalars quoted: must run, with the original's
//                 cycles
//   dup_key       a key repeated with another value: must be rejected
//   unknown_key   a fixed key (node field, operator parameter, tensor or stream field, port)
//                 misspelled: must be rejected
//   out_of_range  an integer pushed outside its range (below min, above max, +2^32, > 2^63):
//                 must be rejected
//   wrong_type    a single value replaced by a mapping: must be rejected
//   free          a value changed to another plausible one, an entry or node deleted: may run
//                 or be rejected
//   truncate      the text cut at a random byte: may run or be rejected
//
// Whatever the class, a run never ends by a signal or a time-out, and a rejection is one line
// "error: ..." without library text (yaml-cpp, stoll, std::, vector, bad_alloc, ...).
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "hw/ops/op.h"
#include "hw/presets/hardware.h"
#include "hw/stream/number_text.h"

namespace stepsim::mutation {

struct Tree {
  enum Kind { kScalar, kSeq, kMap } kind = kScalar;
  std::string scalar;
  std::vector<Tree> items;                        // kSeq
  std::vector<std::pair<std::string, Tree>> map;  // kMap, in file order (keys may repeat)
};

enum class MutationClass { kNeutral, kDupKey, kUnknownKey, kOutOfRange, kWrongType, kFree, kTruncate };
constexpr MutationClass kAllClasses[] = {
    MutationClass::kNeutral,   MutationClass::kDupKey, MutationClass::kUnknownKey, MutationClass::kOutOfRange,
    MutationClass::kWrongType, MutationClass::kFree,   MutationClass::kTruncate};

struct Mutant {
  std::string text;         // the mutated graph file
  std::string description;  // what was changed, for failure messages ("nodes[3].params.rank = -1")
};

inline Tree from_yaml(const YAML::Node& n) {
  Tree t;
  if (n.IsMap()) {
    t.kind = Tree::kMap;
    for (auto it = n.begin(); it != n.end(); ++it) t.map.push_back({it->first.Scalar(), from_yaml(it->second)});
  } else if (n.IsSequence()) {
    t.kind = Tree::kSeq;
    for (const YAML::Node& e : n) t.items.push_back(from_yaml(e));
  } else {
    t.scalar = n.IsScalar() ? n.Scalar() : "";
  }
  return t;
}

namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("''") : std::string(1, c);
  return q + "'";
}

// Plain keys stay plain: the loader finds the graph's `params:` section by its line.
std::string key_text(const std::string& k) {
  const bool plain = !k.empty() && (std::isalpha(uint8_t(k[0])) || k[0] == '_') &&
                     std::all_of(k.begin(), k.end(), [](char c) { return std::isalnum(uint8_t(c)) || c == '_'; });
  return plain ? k : quoted(k);
}

void emit(const Tree& t, int indent, std::string& out);

void emit_value(const Tree& v, int indent, std::string& out) {
  if (v.kind == Tree::kScalar)
    out += " " + quoted(v.scalar) + "\n";
  else if (v.kind == Tree::kMap && v.map.empty())
    out += " {}\n";
  else if (v.kind == Tree::kSeq && v.items.empty())
    out += " []\n";
  else {
    out += "\n";
    emit(v, indent + 2, out);
  }
}

void emit(const Tree& t, int indent, std::string& out) {
  const std::string pad(size_t(indent), ' ');
  if (t.kind == Tree::kMap)
    for (const auto& [k, v] : t.map) {
      out += pad + key_text(k) + ":";
      emit_value(v, indent, out);
    }
  else if (t.kind == Tree::kSeq)
    for (const Tree& v : t.items) {
      out += pad + "-";
      emit_value(v, indent, out);
    }
  else
    out += pad + quoted(t.scalar) + "\n";
}

// ---- Sites: every place of the tree an edit can touch, with what the loader expects there.

enum class Context { kTop, kNode, kNodeParams, kNodeInputs, kTensor, kTensorShape, kStream, kGraphParams, kOther };

struct Site {
  Tree* parent = nullptr;  // the map (or list) holding the entry
  size_t index = 0;        // entry (or item) index in the parent
  Context context = Context::kOther;
  std::string op;    // the node's operator (node contexts)
  std::string path;  // "nodes[3].params.rank", for messages
};

Tree& value_at(const Site& s) {
  return s.parent->kind == Tree::kMap ? s.parent->map[s.index].second : s.parent->items[s.index];
}
const std::string* key_at(const Site& s) {
  return s.parent->kind == Tree::kMap ? &s.parent->map[s.index].first : nullptr;
}

const Tree* find(const Tree& map, const std::string& key) {
  for (const auto& [k, v] : map.map)
    if (k == key) return &v;
  return nullptr;
}

void collect(Tree& t, Context context, const std::string& op, const std::string& path, std::vector<Site>& sites) {
  if (t.kind == Tree::kMap) {
    for (size_t i = 0; i < t.map.size(); ++i) {
      const std::string& k = t.map[i].first;
      Tree& v = t.map[i].second;
      sites.push_back({&t, i, context, op, path + (path.empty() ? "" : ".") + k});
      const std::string sub = sites.back().path;
      Context child = Context::kOther;
      std::string child_op = op;
      if (context == Context::kTop && k == "nodes" && v.kind == Tree::kSeq) {
        for (size_t n = 0; n < v.items.size(); ++n) {
          const Tree* op_node = v.items[n].kind == Tree::kMap ? find(v.items[n], "op") : nullptr;
          sites.push_back({&v, n, Context::kOther, "", sub + "[" + std::to_string(n) + "]"});
          collect(v.items[n], Context::kNode, op_node ? op_node->scalar : "", sub + "[" + std::to_string(n) + "]",
                  sites);
        }
        continue;
      }
      if (context == Context::kTop && (k == "tensors" || k == "streams") && v.kind == Tree::kMap) {
        for (size_t n = 0; n < v.map.size(); ++n) {
          sites.push_back({&v, n, Context::kOther, "", sub + "." + v.map[n].first});
          collect(v.map[n].second, k == "tensors" ? Context::kTensor : Context::kStream, "", sub + "." + v.map[n].first,
                  sites);
        }
        continue;
      }
      if (context == Context::kTop && k == "params") child = Context::kGraphParams;
      if (context == Context::kNode && k == "params") child = Context::kNodeParams;
      if (context == Context::kNode && k == "inputs") child = Context::kNodeInputs;
      if (context == Context::kTensor && k == "shape") child = Context::kTensorShape;
      collect(v, child, child_op, sub, sites);
    }
  } else if (t.kind == Tree::kSeq) {
    for (size_t i = 0; i < t.items.size(); ++i) {
      sites.push_back({&t, i, context, op, path + "[" + std::to_string(i) + "]"});
      collect(t.items[i], Context::kOther, op, sites.back().path, sites);
    }
  }
}

template <class Pred>
std::vector<Site> sites_where(std::vector<Site>& all, Pred p) {
  std::vector<Site> out;
  for (const Site& s : all)
    if (p(s)) out.push_back(s);
  return out;
}

size_t pick(std::mt19937_64& rng, size_t n) { return size_t(rng() % n); }

bool is_int(const std::string& s, int64_t& v) { return parse_int64(s, v); }

const ParamSpec* param_spec(const std::string& op, const std::string& name) {
  if (!OpRegistry::instance().has(op)) return nullptr;
  for (const ParamSpec& p : OpRegistry::instance().find(op).params)
    if (p.name == name) return &p;
  return nullptr;
}

Tree scalar_tree(const std::string& s) {
  Tree t;
  t.scalar = s;
  return t;
}

// A value outside the allowed range of the integer at `s`, or "" when the site holds none.
std::string out_of_range_value(const Site& s, std::mt19937_64& rng) {
  const Tree& v = value_at(s);
  const std::string* key = key_at(s);
  int64_t current = 0;
  if (v.kind != Tree::kScalar || !is_int(v.scalar, current)) return "";
  IntRange range{0, 0};
  if (s.context == Context::kNodeParams && key) {
    const ParamSpec* p = param_spec(s.op, *key);
    if (!p || p->type != ParamSpec::Type::kInt) return "";
    range = p->range;
  } else if (s.context == Context::kNode && key && *key == "depth") {
    range = {1, int64_t(kMaxFifoDepth)};
  } else if (s.context == Context::kNode && key && *key == "outputs") {
    range = {1, 256};
  } else if (s.context == Context::kNode && key && *key == "compute_bw") {
    range = {1, int64_t(kMaxBandwidth)};
  } else if (s.context == Context::kTensorShape) {
    range = {1, kMaxParamValue};
  } else if (s.context == Context::kStream && key && *key == "count") {
    range = {0, int64_t(kMaxStreamBeats)};
  } else {
    return "";
  }
  std::vector<std::string> bad = {std::to_string(range.max + 1), "9223372036854775808", "-9223372036854775809",
                                  "123456789012345678901234"};
  if (range.min > INT64_MIN) bad.push_back(std::to_string(range.min - 1));
  const int64_t wrapped = current + (int64_t(1) << 32);
  if (wrapped > range.max) bad.push_back(std::to_string(wrapped));
  return bad[pick(rng, bad.size())];
}

std::string describe(const Site& s, const std::string& what) { return s.path + ": " + what; }

bool mutate_tree(Tree& g, MutationClass c, std::mt19937_64& rng, std::string& description) {
  std::vector<Site> all;
  collect(g, Context::kTop, "", "", all);
  auto map_entries = [](const Site& s) { return s.parent->kind == Tree::kMap; };
  switch (c) {
    case MutationClass::kNeutral: {
      // Every mapping's entries shuffled: the meaning of a YAML mapping has no order.
      std::function<void(Tree&)> shuffle_maps = [&](Tree& t) {
        for (size_t i = t.map.size(); i > 1; --i) std::swap(t.map[i - 1], t.map[pick(rng, i)]);
        for (auto& e : t.map) shuffle_maps(e.second);
        for (auto& e : t.items) shuffle_maps(e);
      };
      shuffle_maps(g);
      description = "every mapping shuffled";
      return true;
    }
    case MutationClass::kDupKey: {
      auto sites = sites_where(all, map_entries);
      if (sites.empty()) return false;
      const Site s = sites[pick(rng, sites.size())];
      auto entry = s.parent->map[s.index];
      int64_t v = 0;
      if (entry.second.kind == Tree::kScalar)
        entry.second.scalar = is_int(entry.second.scalar, v) ? std::to_string(v + 1) : entry.second.scalar + "x";
      description = describe(s, "repeated with value '" + entry.second.scalar + "'");
      s.parent->map.insert(s.parent->map.begin() + long(s.index) + 1, entry);
      return true;
    }
    case MutationClass::kUnknownKey: {
      auto sites = sites_where(all, [&](const Site& s) {
        return map_entries(s) &&
               (s.context == Context::kTop || s.context == Context::kNode || s.context == Context::kNodeParams ||
                s.context == Context::kNodeInputs || s.context == Context::kTensor || s.context == Context::kStream);
      });
      if (sites.empty()) return false;
      const Site s = sites[pick(rng, sites.size())];
      s.parent->map[s.index].first += "_typo";
      description = describe(s, "key misspelled as '" + s.parent->map[s.index].first + "'");
      return true;
    }
    case MutationClass::kOutOfRange: {
      std::vector<std::pair<Site, std::string>> options;
      for (const Site& s : all) {
        const std::string bad = out_of_range_value(s, rng);
        if (!bad.empty()) options.push_back({s, bad});
      }
      if (options.empty()) return false;
      const auto& [s, bad] = options[pick(rng, options.size())];
      value_at(s).scalar = bad;
      description = describe(s, "set to " + bad);
      return true;
    }
    case MutationClass::kWrongType: {
      auto sites = sites_where(all, [&](const Site& s) {
        return map_entries(s) && value_at(s).kind == Tree::kScalar && s.context != Context::kOther;
      });
      if (sites.empty()) return false;
      const Site s = sites[pick(rng, sites.size())];
      Tree m;
      m.kind = Tree::kMap;
      m.map.push_back({"a", scalar_tree("1")});
      value_at(s) = m;
      description = describe(s, "a mapping instead of a value");
      return true;
    }
    case MutationClass::kFree: {
      switch (pick(rng, 4)) {
        case 0: {  // an integer changed to another plausible one
          std::vector<Site> ints;
          int64_t v = 0;
          for (const Site& s : all)
            if (value_at(s).kind == Tree::kScalar && is_int(value_at(s).scalar, v)) ints.push_back(s);
          if (ints.empty()) return false;
          const Site s = ints[pick(rng, ints.size())];
          is_int(value_at(s).scalar, v);
          const int64_t choices[] = {0, 1, 2 * v, v + 1, v - 1, 3};
          value_at(s).scalar = std::to_string(choices[pick(rng, 6)]);
          description = describe(s, "set to " + value_at(s).scalar);
          return true;
        }
        case 1: {  // a node's operator swapped for another
          auto nodes = sites_where(
              all, [](const Site& s) { return s.context == Context::kNode && s.parent->map[s.index].first == "op"; });
          if (nodes.empty()) return false;
          const Site s = nodes[pick(rng, nodes.size())];
          auto ops = OpRegistry::instance().all();
          value_at(s).scalar = ops[pick(rng, ops.size())]->name;
          description = describe(s, "operator " + value_at(s).scalar);
          return true;
        }
        case 2: {  // an input rewired to another node
          auto inputs = sites_where(all, [](const Site& s) { return s.context == Context::kNodeInputs; });
          auto names = sites_where(
              all, [](const Site& s) { return s.context == Context::kNode && s.parent->map[s.index].first == "name"; });
          if (inputs.empty() || names.empty()) return false;
          const Site s = inputs[pick(rng, inputs.size())];
          value_at(s).scalar = value_at(names[pick(rng, names.size())]).scalar;
          description = describe(s, "rewired to " + value_at(s).scalar);
          return true;
        }
        default: {  // an entry or a list item deleted
          if (all.empty()) return false;
          const Site s = all[pick(rng, all.size())];
          if (s.parent->kind == Tree::kMap)
            s.parent->map.erase(s.parent->map.begin() + long(s.index));
          else
            s.parent->items.erase(s.parent->items.begin() + long(s.index));
          description = describe(s, "deleted");
          return true;
        }
      }
    }
    case MutationClass::kTruncate:
      return false;  // handled on the text
  }
  return false;
}

}  // namespace

// Block-style YAML, every scalar single-quoted (so "1" stays the text 1, "{0} S1" stays text).
inline std::string to_yaml(const Tree& t) {
  std::string out;
  emit(t, 0, out);
  return out;
}

inline const char* class_name(MutationClass c) {
  switch (c) {
    case MutationClass::kNeutral:
      return "neutral";
    case MutationClass::kDupKey:
      return "dup_key";
    case MutationClass::kUnknownKey:
      return "unknown_key";
    case MutationClass::kOutOfRange:
      return "out_of_range";
    case MutationClass::kWrongType:
      return "wrong_type";
    case MutationClass::kFree:
      return "free";
    case MutationClass::kTruncate:
      return "truncate";
  }
  return "?";
}

inline bool must_reject(MutationClass c) {
  return c == MutationClass::kDupKey || c == MutationClass::kUnknownKey || c == MutationClass::kOutOfRange ||
         c == MutationClass::kWrongType;
}

inline bool must_run_unchanged(MutationClass c) { return c == MutationClass::kNeutral; }

// One mutant of `graph` (the parsed example) in class `c`; false when the graph offers no place
// for that class. Deterministic for a given generator state.
inline bool mutate(const Tree& graph, MutationClass c, std::mt19937_64& rng, Mutant& out) {
  if (c == MutationClass::kTruncate) {
    const std::string text = to_yaml(graph);
    const size_t cut = pick(rng, text.size());
    out.text = text.substr(0, cut);
    out.description = "cut after byte " + std::to_string(cut);
    return true;
  }
  Tree g = graph;
  if (!mutate_tree(g, c, rng, out.description)) return false;
  out.text = to_yaml(g);
  return true;
}

}  // namespace stepsim::mutation
