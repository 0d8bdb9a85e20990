// Every graph in graphs/examples/ (found at run time, so a new example is tested without touching
// this file) loads, runs to completion in timing mode, and is deterministic: elaborating nodes and
// channels in a shuffled order (SimOptions::shuffle_seed) gives the same cycles and the same
// recorded streams. Examples that declare tensors also run in functional mode. Each example's
// header comment must show the command that runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/presets/hardware.h"
#include "sim/engine/simulation.h"
#include "sim/graph/loader.h"

namespace stepsim {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> examples() {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(fs::path(STEPSIM_SOURCE_DIR) / "graphs/examples"))
    if (e.path().extension() == ".yaml") v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

SimResult run(const Graph& g, uint64_t shuffle, bool functional = false, const std::string& out_dir = "") {
  SimOptions opt;
  opt.hw = load_preset("step-artifact");
  opt.shuffle_seed = shuffle;
  opt.functional = functional;
  opt.output_dir = out_dir;
  return simulate(g, opt);
}

TEST(Examples, OnePerOperatorFamilyIsPresent) {
  std::vector<std::string> names;
  for (const fs::path& p : examples()) names.push_back(p.filename().string());
  for (const char* want : {"offchip_load_store.yaml", "onchip_buffers.yaml", "routing.yaml", "higher_order.yaml",
                           "shape_ops.yaml", "moe_small.yaml"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << "graphs/examples/" << want << " missing";
}

TEST(Examples, EveryExampleRunsAndIsDeterministic) {
  const auto files = examples();
  ASSERT_FALSE(files.empty());
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.filename().string());
    // The header comment tells the reader how to run it.
    std::ifstream f(p);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_EQ(text.str().rfind("#", 0), 0u) << "an example starts with a header comment";
    EXPECT_NE(text.str().find("stepsim run graphs/examples/" + p.filename().string()), std::string::npos)
        << "the header comment shows the command that runs the example";

    Graph g = load_graph(p.string(), {});
    SimResult a = run(g, 0);
    ASSERT_TRUE(a.ok) << a.error;
    EXPECT_GT(a.cycles, 0u);
    SimResult b = run(g, 1);
    ASSERT_TRUE(b.ok) << b.error;
    EXPECT_EQ(a.cycles, b.cycles) << "cycles depend on elaboration order";
    EXPECT_EQ(a.offchip_read_bytes, b.offchip_read_bytes);
    EXPECT_EQ(a.offchip_write_bytes, b.offchip_write_bytes);
    ASSERT_EQ(a.recorded.size(), b.recorded.size());
    for (const auto& [sink, beats] : a.recorded) {
      EXPECT_EQ(format_beats(beats), format_beats(b.recorded.at(sink))) << "sink " << sink;
      EXPECT_EQ(a.recorded_times.at(sink), b.recorded_times.at(sink)) << "sink " << sink;
    }

    if (!g.tensors.empty()) {
      const fs::path dir = fs::temp_directory_path() / ("stepsim_example_" + p.stem().string());
      fs::remove_all(dir);
      fs::create_directories(dir);
      SimResult fr = run(g, 0, true, dir.string());
      ASSERT_TRUE(fr.ok) << "functional mode: " << fr.error;
      EXPECT_EQ(fr.cycles, a.cycles) << "functional and timing mode give the same cycles";
      for (const TensorSpec& t : g.tensors) {
        if (t.init != "output") continue;
        EXPECT_TRUE(fs::exists(dir / (t.name + ".npy"))) << t.name << ".npy not written";
      }
      fs::remove_all(dir);
    }
  }
}

}  // namespace
}  // namespace stepsim
