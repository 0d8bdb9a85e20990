// A technology description: what one action costs in energy and what one unit costs in area and
// leakage, at one process node, each number with its source. The entries are declared once, one
// row each, in tech_entries.def; the files are YAML, hw/presets/tech/*tech*.yaml (a folder of
// their own, so that the hardware presets' list, preset_names(), does not take them for presets),
// read strictly like the presets (strict_yaml.h). docs/energy.md has the built-in table and its
// sources.
#pragma once

#include <string>
#include <vector>

namespace stepsim {

// One number of a technology table and where it comes from.
struct TechEntry {
  double value = 0;    // finite, >= 0, in the unit of its row
  std::string source;  // citation text, never empty
};

struct Technology {
  std::string name, description;
  double node_nm = 0;    // the process node the numbers are for
  double clock_ghz = 0;  // the clock the numbers assume; 0 = not given
#define STEPSIM_TECH(member, section, key, unit, doc) TechEntry member;
#include "hw/presets/tech_entries.def"
#undef STEPSIM_TECH

  // One row of tech_entries.def.
  struct EntryDoc {
    std::string section, key, unit, doc;
    std::string dotted() const { return section + "." + key; }
  };
  static const std::vector<EntryDoc>& entries();
  // The entry named "section.key"; throws std::invalid_argument naming an unknown name.
  const TechEntry& entry(const std::string& dotted) const;
  TechEntry& entry(const std::string& dotted);
};

// The table a run prices its actions with when none is named (--tech).
constexpr const char* kDefaultTechnology = "tech-7nm-literature";

// Sets the entry "section.key" to the number `value` (a run's `--set tech.section.key=value`); its
// source becomes the override. Throws std::invalid_argument naming an unknown entry or a value that
// is not a finite number >= 0.
void set_tech_entry(Technology& t, const std::string& dotted, const std::string& value);

// Reads a technology file's text; `source` (the file's path) names it in every error
// (std::invalid_argument): a missing or unknown key, a duplicate key, an entry without a source,
// a negative, non-finite or non-numeric value, a section that is not a mapping.
Technology parse_technology(const std::string& text, const std::string& source);
// kDefaultTechnology, loaded once.
const Technology& default_technology();
// Loads a technology by name (hw/presets/tech/NAME.yaml) or by path to a YAML file.
Technology load_technology(const std::string& name_or_path);
// The names of the built-in technologies (the stems of hw/presets/tech/*tech*.yaml), sorted.
std::vector<std::string> technology_names();
// The YAML text of a technology, read back by parse_technology to the same values (numbers are
// written with 17 significant digits).
std::string technology_to_yaml(const Technology& t);

}  // namespace stepsim
