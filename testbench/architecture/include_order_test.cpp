// The layers of the tree (docs/architecture.md, "Layers"): a source file may include headers of
// its own folder and of the folders its layer stands on, directly or through other layers; never
// of a layer above, nor of one beside it. The layers are the one list of the top-level
// CMakeLists.txt (STEPSIM_LAYERS), which CMake writes to layers.txt and links by: this test reads
// the same file, walks every .h/.cpp of the layers' top folders (hw/, sim/, graphs/, and the
// layers under scripts/) and names each include that goes against the list.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Layer {
  std::string name, folder;
  std::vector<std::string> stands_on;  // names of lower layers
};

// "name folder [layer...]" per line, lowest first; a layer may stand only on layers listed above it.
std::vector<Layer> parse_layers(const std::string& text) {
  std::vector<Layer> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    Layer l;
    if (!(words >> l.name >> l.folder)) continue;
    for (std::string w; words >> w;) l.stands_on.push_back(w);
    out.push_back(l);
  }
  return out;
}

const std::vector<Layer>& layers() {
  static const std::vector<Layer> all = [] {
    std::ifstream in(STEPSIM_LAYERS_FILE);
    return parse_layers(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  }();
  return all;
}

const Layer* layer_of(const std::vector<Layer>& all, const std::string& folder) {
  for (const Layer& l : all)
    if (l.folder == folder) return &l;
  return nullptr;
}

// The folders a file of `layer` may include: its own and those of every layer below it that it
// stands on, directly or not.
std::set<std::string> reachable_folders(const std::vector<Layer>& all, const Layer& layer) {
  std::set<std::string> folders{layer.folder};
  std::vector<std::string> todo = layer.stands_on;
  std::set<std::string> seen;
  while (!todo.empty()) {
    const std::string name = todo.back();
    todo.pop_back();
    if (!seen.insert(name).second) continue;
    for (const Layer& l : all)
      if (l.name == name) {
        folders.insert(l.folder);
        todo.insert(todo.end(), l.stands_on.begin(), l.stands_on.end());
      }
  }
  return folders;
}

// The includes of `text` (a file in `folder`) that go against the layers, as "line N: #include
// "x" (folder -> target, why)". Includes without a folder (Verilator's generated headers) are
// third-party.
std::vector<std::string> violations(const std::vector<Layer>& all, const std::string& folder, const std::string& text) {
  static const std::regex include(R"(^\s*#\s*include\s+"([^"]+)\")");
  std::vector<std::string> out;
  const Layer* own = layer_of(all, folder);
  if (!own) return {"folder " + folder + " is in no layer"};
  const std::set<std::string> allowed = reachable_folders(all, *own);
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    std::smatch m;
    if (!std::regex_search(line, m, include)) continue;
    const std::string target = fs::path(m[1].str()).parent_path().string();
    if (target.empty() || allowed.count(target)) continue;
    const Layer* theirs = layer_of(all, target);
    out.push_back("line " + std::to_string(n) + ": #include \"" + m[1].str() + "\" (" + own->name + " " + folder +
                  " -> " + (theirs ? theirs->name + " " + target + ", which " + own->name + " does not stand on"
                                   : target + ", in no layer") +
                  ")");
  }
  return out;
}

std::vector<fs::path> sources() {
  std::set<fs::path> tops;
  for (const Layer& l : layers()) tops.insert(fs::path(l.folder).begin()->string() == "scripts" ? fs::path(l.folder)
                                                                                                 : *fs::path(l.folder).begin());
  std::vector<fs::path> out;
  for (const fs::path& top : tops)
    for (const auto& e : fs::recursive_directory_iterator(fs::path(STEPSIM_SOURCE_DIR) / top))
      if (e.is_regular_file() && (e.path().extension() == ".h" || e.path().extension() == ".cpp"))
        out.push_back(e.path());
  return out;
}

std::string folder_of(const fs::path& file) {
  return fs::relative(file.parent_path(), STEPSIM_SOURCE_DIR).generic_string();
}

TEST(IncludeOrder, TheListIsReadAndEveryLayerStandsOnLowerOnes) {
  ASSERT_GE(layers().size(), 15u) << STEPSIM_LAYERS_FILE;
  std::set<std::string> below;
  for (const Layer& l : layers()) {
    for (const std::string& d : l.stands_on)
      EXPECT_TRUE(below.count(d)) << l.name << " stands on " << d << ", which is not listed below it";
    EXPECT_TRUE(below.insert(l.name).second) << "layer " << l.name << " is listed twice";
  }
}

TEST(IncludeOrder, EverySourceFolderHasALayer) {
  for (const fs::path& f : sources())
    EXPECT_NE(layer_of(layers(), folder_of(f)), nullptr)
        << folder_of(f) << " (" << f.filename().string()
        << ") is in no layer: add it to STEPSIM_LAYERS (CMakeLists.txt) and docs/architecture.md";
}

TEST(IncludeOrder, NoIncludeGoesAgainstTheLayers) {
  size_t checked = 0;
  for (const fs::path& f : sources()) {
    if (!layer_of(layers(), folder_of(f))) continue;  // the test above names it
    std::ifstream in(f);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const std::string& v : violations(layers(), folder_of(f), text))
      ADD_FAILURE() << fs::relative(f, STEPSIM_SOURCE_DIR).generic_string() << " " << v;
    ++checked;
  }
  EXPECT_GT(checked, 100u);  // the walk found the tree
}

TEST(IncludeOrder, TheCheckNamesAnUpwardASidewaysAndAnUnlistedInclude) {
  const std::vector<Layer> all = parse_layers("stream hw/stream\nfunctions hw/functions stream\n"
                                              "channel hw/channel stream\nops hw/ops channel functions\n"
                                              "apps scripts/cli ops\n");
  EXPECT_EQ(violations(all, "hw/ops", "#include \"hw/ops/op.h\"\n#include \"hw/stream/token.h\"\n"),
            std::vector<std::string>{});
  EXPECT_EQ(violations(all, "hw/ops", "// x\n#include \"scripts/cli/cli.h\"\n"),
            std::vector<std::string>{
                "line 2: #include \"scripts/cli/cli.h\" (ops hw/ops -> apps scripts/cli, which ops does not stand on)"});
  EXPECT_EQ(violations(all, "hw/channel", "#include \"hw/functions/functions.h\"\n"),
            std::vector<std::string>{"line 1: #include \"hw/functions/functions.h\" (channel hw/channel -> functions "
                                     "hw/functions, which channel does not stand on)"});
  EXPECT_EQ(violations(all, "hw/ops", "#include \"sim/nowhere/x.h\"\n"),
            std::vector<std::string>{"line 1: #include \"sim/nowhere/x.h\" (ops hw/ops -> sim/nowhere, in no layer)"});
}

}  // namespace
