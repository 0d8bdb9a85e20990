// Strict reading of YAML documents (graph files, presets): every value is read through these,
// so a wrong type, an out-of-range number, a duplicate or an unknown key is an error naming the
// file, line, column, key and value, never a library's message and never a silently dropped entry.
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "hw/stream/number_text.h"

namespace stepsim {

// "FILE:LINE:COL" of a node (1-based), or the file alone when yaml-cpp has no position.
std::string at(const std::string& source, const YAML::Node& n);
// The deepest nesting of lists and mappings a strict document may have (stepsim's files need
// about 6 levels; a literal tuple is text, not nesting).
inline constexpr int kMaxYamlDepth = 64;
// Parses a document, refusing anchors, aliases and nesting deeper than kMaxYamlDepth (each names
// its line), and rejects repeated keys in any of its mappings (yaml-cpp keeps both entries
// of a repeated key and returns the first, so a second `nodes:` or `fn:` would be dropped).
YAML::Node load_strict(const std::string& text, const std::string& source);
// What a node holds, for messages: "a mapping", "a list", "nothing" or the value quoted.
std::string kind_name(const YAML::Node& n);
// A single value (not a list or mapping); `key` names it in the message.
std::string scalar(const YAML::Node& n, const std::string& source, const std::string& key);
// A single 64-bit integer in `range`.
int64_t integer(const YAML::Node& n, const std::string& source, const std::string& key, IntRange range);
// A mapping whose keys are all in `allowed` (any keys when `allowed` is empty).
void check_map(const YAML::Node& n, const std::string& source, const std::string& key,
               const std::vector<std::string>& allowed);

}  // namespace stepsim
