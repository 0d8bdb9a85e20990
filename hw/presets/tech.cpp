#include "hw/presets/tech.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "hw/presets/input_file.h"
#include "hw/presets/strict_yaml.h"
#include "hw/stream/number_text.h"

namespace stepsim {

namespace {

// A row of tech_entries.def with the member it fills.
struct Row {
  Technology::EntryDoc doc;
  TechEntry Technology::*member;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
#define STEPSIM_TECH(member, section, key, unit, doc) {{section, key, unit, doc}, &Technology::member},
#include "hw/presets/tech_entries.def"
#undef STEPSIM_TECH
  };
  return table;
}

const char* const kSections[] = {"energy_pj", "area_mm2", "leakage_mw"};

std::string tech_dir() { return std::string(STEPSIM_SOURCE_DIR) + "/hw/presets/tech"; }

// A finite number >= 0 (`positive`: > 0), written as decimal text ("1e-3" and "0.5" are numbers;
// ".nan", ".inf", "1x" are not).
double number(const YAML::Node& n, const std::string& source, const std::string& key, bool positive) {
  const std::string text = scalar(n, source, key);
  double v = 0;
  if (!parse_finite_double(text, v))
    throw std::invalid_argument(at(source, n) + ": " + key + " must be a finite number, got '" + text + "'");
  if (v < 0 || (positive && v == 0))
    throw std::invalid_argument(at(source, n) + ": " + key + " must be " + (positive ? "> 0" : ">= 0") + ", got '" +
                                text + "'");
  return v;
}

std::string text_field(const YAML::Node& root, const std::string& source, const std::string& key) {
  if (!root[key]) throw std::invalid_argument(source + ": missing '" + key + "'");
  return scalar(root[key], source, key);
}

TechEntry read_entry(const YAML::Node& n, const std::string& source, const std::string& key) {
  check_map(n, source, key, {"value", "source"});
  if (!n["value"]) throw std::invalid_argument(at(source, n) + ": " + key + " has no value");
  if (!n["source"]) throw std::invalid_argument(at(source, n) + ": " + key + " has no source (cite where it comes from)");
  TechEntry e;
  e.value = number(n["value"], source, key + ".value", false);
  e.source = scalar(n["source"], source, key + ".source");
  if (e.source.empty()) throw std::invalid_argument(at(source, n["source"]) + ": " + key + ".source is empty");
  return e;
}

// Fills the entries of one section, refusing keys that are not rows and rows that are missing.
void read_section(Technology& t, const YAML::Node& root, const std::string& section, const std::string& source) {
  if (!root[section]) throw std::invalid_argument(source + ": missing section '" + section + "'");
  const YAML::Node sec = root[section];
  std::vector<std::string> keys;
  for (const Row& r : rows())
    if (r.doc.section == section) keys.push_back(r.doc.key);
  check_map(sec, source, section, keys);
  for (const Row& r : rows()) {
    if (r.doc.section != section) continue;
    if (!sec[r.doc.key]) throw std::invalid_argument(at(source, sec) + ": missing entry '" + r.doc.dotted() + "'");
    t.*r.member = read_entry(sec[r.doc.key], source, r.doc.dotted());
  }
}

}  // namespace

const std::vector<Technology::EntryDoc>& Technology::entries() {
  static const std::vector<EntryDoc> docs = [] {
    std::vector<EntryDoc> d;
    for (const Row& r : rows()) d.push_back(r.doc);
    return d;
  }();
  return docs;
}

TechEntry& Technology::entry(const std::string& dotted) {
  for (const Row& r : rows())
    if (r.doc.dotted() == dotted) return this->*r.member;
  std::string names;
  for (const Row& r : rows()) names += (names.empty() ? "" : ", ") + r.doc.dotted();
  throw std::invalid_argument("unknown technology entry '" + dotted + "'; known: " + names);
}

const TechEntry& Technology::entry(const std::string& dotted) const {
  return const_cast<Technology*>(this)->entry(dotted);
}

Technology parse_technology(const std::string& text, const std::string& source) {
  const YAML::Node root = load_strict(text, source);
  check_map(root, source, "technology file",
            {"name", "description", "node_nm", "clock_ghz", "energy_pj", "area_mm2", "leakage_mw"});
  Technology t;
  t.name = text_field(root, source, "name");
  t.description = text_field(root, source, "description");
  if (!root["node_nm"]) throw std::invalid_argument(source + ": missing 'node_nm'");
  t.node_nm = number(root["node_nm"], source, "node_nm", true);
  if (root["clock_ghz"]) t.clock_ghz = number(root["clock_ghz"], source, "clock_ghz", true);
  for (const char* section : kSections) read_section(t, root, section, source);
  return t;
}

Technology load_technology(const std::string& name_or_path) {
  const std::string path = named_yaml_file(name_or_path, tech_dir(), "technology", "technologies", technology_names);
  return parse_technology(read_input_file(path, "technology file", kMaxTextInputBytes), path);
}

void set_tech_entry(Technology& t, const std::string& dotted, const std::string& value) {
  TechEntry& e = t.entry(dotted);
  double v = 0;
  if (!parse_finite_double(value, v) || v < 0)
    throw std::invalid_argument("tech." + dotted + " must be a finite number >= 0, got '" + value + "'");
  e.value = v;
  e.source = "set on the command line: tech." + dotted + "=" + value;
}

const Technology& default_technology() {
  static const Technology t = load_technology(kDefaultTechnology);
  return t;
}

std::vector<std::string> technology_names() {
  // A technology table's name says so (tech-7nm-literature); other YAML files may sit beside them.
  std::vector<std::string> names = yaml_file_names(tech_dir());
  names.erase(std::remove_if(names.begin(), names.end(),
                             [](const std::string& n) { return n.find("tech") == std::string::npos; }),
              names.end());
  return names;
}

std::string technology_to_yaml(const Technology& t) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name << YAML::Key << "description"
      << YAML::Value << t.description << YAML::Key << "node_nm" << YAML::Value << t.node_nm;
  if (t.clock_ghz > 0) out << YAML::Key << "clock_ghz" << YAML::Value << t.clock_ghz;
  for (const char* section : kSections) {
    out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    for (const Row& r : rows())
      if (r.doc.section == section)
        out << YAML::Key << r.doc.key << YAML::Value << YAML::BeginMap << YAML::Key << "value" << YAML::Value
            << (t.*r.member).value << YAML::Key << "source" << YAML::Value << (t.*r.member).source << YAML::EndMap;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace stepsim
