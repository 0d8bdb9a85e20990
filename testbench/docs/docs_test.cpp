// The generated documentation cannot drift from the code: docs/operators.md and docs/presets.md
// must equal what `stepsim ops --markdown` / `stepsim presets --markdown` print now; the preset
// table lists every hardware parameter with its unit, range and origin; every key of the JSON
// report is documented in docs/user-guide.md; and relative links in the docs point at existing
// files.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hw/presets/hardware.h"
#include "scripts/cli/cli.h"
#include "scripts/cli/docs.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"
#include "sim/report/report.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = STEPSIM_SOURCE_DIR;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string cli(std::vector<std::string> args) {
  args.insert(args.begin(), "stepsim");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  EXPECT_EQ(cli_main(int(argv.size()), argv.data(), out, err), 0) << err.str();
  return out.str();
}

// "line N: expected '...', found '...'" for the first differing line.
std::string first_difference(const std::string& want, const std::string& have) {
  std::istringstream a(want), b(have);
  std::string la, lb;
  for (int n = 1;; ++n) {
    bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
    if (ea && eb) return "no line differs (line endings?)";
    if (ea || eb || la != lb)
      return "line " + std::to_string(n) + ": generated '" + (ea ? "<end of text>" : la) + "', file has '" +
             (eb ? "<end of file>" : lb) + "'";
  }
}

void expect_generated(const std::string& file, const std::vector<std::string>& cmd) {
  const fs::path p = kRoot / "docs" / file;
  ASSERT_TRUE(fs::exists(p)) << "docs/" << file << " is missing: run scripts/gen_docs.sh";
  const std::string want = cli(cmd), have = read_file(p);
  EXPECT_TRUE(want == have) << "docs/" << file << " is out of date with the code: run scripts/gen_docs.sh\n  "
                            << first_difference(want, have);
}

TEST(GeneratedDocs, OperatorReferenceIsUpToDate) { expect_generated("operators.md", {"ops", "--markdown"}); }

TEST(GeneratedDocs, PresetTableIsUpToDate) { expect_generated("presets.md", {"presets", "--markdown"}); }

TEST(GeneratedDocs, LayerLibraryIsUpToDate) { expect_generated("layers.md", {"layers", "--markdown"}); }

TEST(GeneratedDocs, MetricTableIsUpToDate) { expect_generated("metrics.md", {"metrics"}); }

// Each parameter row (hw/presets/hardware_params.def, hbm_params.def) is one line of the preset
// table: its key, unit and range first, its meaning and origin last, in the rows' order.
TEST(GeneratedDocs, PresetTableListsEveryParameterWithUnitRangeAndOrigin) {
  std::ostringstream out;
  write_presets_markdown(out);
  const std::string table = out.str();
  size_t from = 0;
  for (const auto& f : HardwareParams::fields()) {
    ASSERT_FALSE(f.origin.empty()) << "hardware parameter '" << f.key << "' has no origin";
    const std::string allowed = f.max ? std::to_string(f.min) + ".." + std::to_string(f.max) : "";
    const size_t at = table.find("\n| `" + f.key + "` | " + f.unit + " | " + allowed + " |", from);
    ASSERT_NE(at, std::string::npos) << "no row, or out of order, for '" << f.key << "'";
    const std::string line = table.substr(at + 1, table.find('\n', at + 1) - at - 1);
    const std::string end = " | " + f.doc + " | " + f.origin + " |";
    EXPECT_EQ(line.substr(line.size() - std::min(line.size(), end.size())), end) << line;
    from = at + 1;
  }
}

TEST(GeneratedDocs, MarkdownFlagsAreTheOnlyOptions) {
  std::vector<std::string> args = {"stepsim", "ops", "--json"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  EXPECT_EQ(cli_main(int(argv.size()), argv.data(), out, err), 1);
  EXPECT_NE(err.str().find("unknown option '--json'"), std::string::npos) << err.str();
}

// Dotted paths of every key in a JSON value; array elements as "name[]".
void collect_keys(const nlohmann::json& j, const std::string& prefix, std::set<std::string>& keys) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string k = prefix.empty() ? it.key() : prefix + "." + it.key();
      keys.insert(k);
      collect_keys(it.value(), k, keys);
    }
  } else if (j.is_array()) {
    for (const auto& e : j) collect_keys(e, prefix + "[]", keys);
  }
}

TEST(HandWrittenDocs, UserGuideDocumentsEveryReportKey) {
  // An example that exercises off-chip memory, compute, buffers and routing.
  std::set<std::string> keys;
  for (const char* ex : {"onchip_buffers.yaml", "higher_order.yaml", "routing.yaml"}) {
    Graph g = load_graph((kRoot / "graphs/examples" / ex).string(), {});
    SimOptions opt;
    opt.hw = load_preset("step-artifact");
    SimResult r = simulate(g, opt);
    ASSERT_TRUE(r.ok) << ex << ": " << r.error;
    collect_keys(make_report(g, opt, r).json, "", keys);
  }
  const std::string guide = read_file(kRoot / "docs/user-guide.md");
  for (const std::string& k : keys)
    EXPECT_NE(guide.find("`" + k + "`"), std::string::npos)
        << "JSON report key `" << k << "` is not documented in docs/user-guide.md (section \"The JSON report\")";
}

TEST(HandWrittenDocs, RelativeLinksPointAtExistingFiles) {
  std::vector<fs::path> files = {kRoot / "README.md"};
  for (const auto& e : fs::directory_iterator(kRoot / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path());
  const std::regex link(R"(\]\(([^)#\s]+)(#[^)]*)?\))");
  for (const fs::path& f : files) {
    const std::string text = read_file(f);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos || target.rfind("mailto:", 0) == 0) continue;
      EXPECT_TRUE(fs::exists(f.parent_path() / target))
          << fs::relative(f, kRoot).string() << " links to '" << target << "', which does not exist";
    }
  }
}

}  // namespace
}  // namespace stepsim
