// The command line itself (Boost.Program_options under scripts/cli/cli.cpp): --version, --help of every
// subcommand, and option errors that name the subcommand, the option, the value and the allowed
// range in one line of our own words.
#include <chrono>
#include <map>
#include <regex>

#include "testbench/cli/cli_fixture.h"

namespace {

using namespace stepsim_cli_test;

const std::vector<std::string> kCommands = {"run",    "ops",   "eval",     "presets", "analyze",
                                            "layers", "build", "downtile", "sweep"};

// No message may show the parser library's own wording or a C++ library function.
void expect_no_library_text(const CliRun& r) {
  for (const char* w : {"boost", "program_options", "stoll", "stoull", "std::", "the argument for option",
                        "the required argument", "unrecognised option", "unrecognized option"})
    EXPECT_EQ(r.output.find(w), std::string::npos) << "library text '" << w << "' in:\n" << r.output;
}

TEST_F(Cli, VersionPrintsTheProjectVersionAndTheCommit) {
  CliRun r = stepsim({"--version"});
  EXPECT_EQ(r.status, 0) << r.output;
  // The commit is there when the sources are a git checkout.
  const bool git = fs::exists(fs::path(STEPSIM_SOURCE_DIR) / ".git");
  EXPECT_TRUE(std::regex_match(r.output, std::regex(git ? "stepsim [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit [0-9a-f]{12}\\)\n"
                                                        : "stepsim [0-9]+\\.[0-9]+\\.[0-9]+\n")))
      << r.output;
}

TEST_F(Cli, OverviewListsEveryCommand) {
  CliRun r = stepsim({"--help"});
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.rfind("usage: stepsim COMMAND [ARGUMENTS] [OPTIONS]\n", 0), 0u) << r.output;
  for (const std::string& c : kCommands) EXPECT_NE(r.output.find("\n  " + c + " "), std::string::npos) << c;
  // Without a command: the same on stderr, exit 2.
  CliRun none = stepsim({});
  EXPECT_EQ(none.status, 2);
  EXPECT_EQ(none.output, r.output);
}

TEST_F(Cli, EverySubcommandHasHelpWithItsOptions) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"run",
       {"usage: stepsim run GRAPH.yaml [OPTIONS]\n", "--preset NAME (=step-artifact)", "--set KEY=VALUE",
        "--mode MODE (=timing)", "--report FILE.json", "--trace FILE.json", "--out DIR", "--shuffle SEED",
        "0..18446744073709551615", "--impl IMPL", "--cosim-dir DIR", "--vcd", "progress on stderr"}},
      {"ops", {"usage: stepsim ops [OPTIONS]\n", "--markdown", "docs/operators.md"}},
      {"eval",
       {"usage: stepsim eval OP [OPTIONS]\n", "-p [ --param ] KEY=VALUE", "-i [ --in ] [PORT=]TOKENS", "--outputs N",
        "1..256", "--preset NAME"}},
      {"presets", {"usage: stepsim presets [OPTIONS]\n", "--markdown", "docs/presets.md"}},
      {"analyze",
       {"usage: stepsim analyze GRAPH.yaml [OPTIONS]\n", "--set KEY=VALUE", "--sym NAME=VALUE",
        "--model MODEL (=paper)", "--json FILE.json"}},
      {"layers", {"usage: stepsim layers [OPTIONS]\n", "--markdown", "docs/layers.md"}},
      {"build", {"usage: stepsim build LAYER [OPTIONS]\n", "-p [ --param ] KEY=VALUE", "-o [ --out ] FILE.yaml"}},
      {"downtile",
       {"usage: stepsim downtile GRAPH.yaml [OPTIONS]\n", "--tile T", "1..65536", "-o [ --out ] FILE.yaml"}},
      {"sweep",
       {"usage: stepsim sweep [GRAPH.yaml] [OPTIONS]\n", "--layer LAYER", "-p [ --param ] KEY=V1,V2..",
        "--set KEY=V1,V2..", "--csv FILE.csv", "wall [s]", "does not fit"}},
  };
  ASSERT_EQ(expected.size(), kCommands.size());
  for (const auto& [cmd, words] : expected) {
    for (const char* flag : {"--help", "-h"}) {
      CliRun r = stepsim({cmd, flag});
      EXPECT_EQ(r.status, 0) << cmd << ": " << r.output;
      EXPECT_EQ(r.output.rfind(words[0], 0), 0u) << r.output;
      for (const std::string& w : words)
        EXPECT_NE(r.output.find(w), std::string::npos) << cmd << ": no '" << w << "' in\n" << r.output;
      EXPECT_NE(r.output.find("-h [ --help ]"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find(" \n"), std::string::npos) << "trailing blanks in\n" << r.output;
      EXPECT_EQ(r.output.back(), '\n');
    }
  }
  // --help wins over everything else on the line, a missing graph file included.
  CliRun r = stepsim({"run", "--bogus-but-later", "--help"});
  EXPECT_NE(r.status, 0) << "an unknown option is still an error: " << r.output;
  EXPECT_EQ(stepsim({"run", "--help", "--mode", "fast"}).status, 0);
}

TEST_F(Cli, UnknownOptionsAreNamedWithTheirSubcommand) {
  const std::string g = write("good.yaml", kGood);
  for (const auto& args : std::vector<std::vector<std::string>>{{"run", g, "--foo"},
                                                                {"eval", "Map", "--foo"},
                                                                {"analyze", g, "--foo"},
                                                                {"build", "swiglu", "--foo"},
                                                                {"downtile", g, "--foo"},
                                                                {"sweep", g, "--foo"},
                                                                {"ops", "--foo"},
                                                                {"presets", "--foo"},
                                                                {"layers", "--foo"}}) {
    CliRun r = stepsim(args);
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_EQ(r.output, "error: " + args[0] + ": unknown option '--foo' (stepsim " + args[0] + " --help)\n");
  }
  // No abbreviations: a prefix of an option is not that option.
  EXPECT_EQ(stepsim({"run", g, "--rep", "x.json"}).output, "error: run: unknown option '--rep' (stepsim run --help)\n");
  CliRun top = stepsim({"--foo"});
  EXPECT_EQ(top.status, 2);
  EXPECT_EQ(top.output.rfind("error: unknown option '--foo'\nusage: stepsim", 0), 0u) << top.output;
}

TEST_F(Cli, MissingValuesAndExtraArgumentsAreNamed) {
  const std::string g = write("good.yaml", kGood);
  EXPECT_EQ(stepsim({"run", g, "--report"}).output, "error: run: --report needs a value\n");
  EXPECT_EQ(stepsim({"run", g, "--report="}).output, "error: run: --report needs a value\n");
  EXPECT_EQ(stepsim({"run", g, "--report", ""}).output, "error: run: --report needs a value\n");
  // The next option is not taken as the value.
  EXPECT_EQ(stepsim({"run", g, "--report", "--trace", "t.json"}).output, "error: run: --report needs a value\n");
  EXPECT_EQ(stepsim({"eval", "Map", "--in"}).output, "error: eval: --in needs a value\n");
  EXPECT_EQ(stepsim({"build", "swiglu", "-o"}).output, "error: build: --out needs a value\n");
  EXPECT_EQ(stepsim({"run", g, "--vcd=yes"}).output, "error: run: --vcd takes no value\n");
  EXPECT_EQ(stepsim({"run", g, "--mode", "timing", "--mode", "functional"}).output,
            "error: run: --mode is given twice\n");
  EXPECT_EQ(stepsim({"run", g, "--set", "fifo_depth=2", "--set", "fifo_depth=3"}).output,
            "error: --set 'fifo_depth' is given twice\n");
  EXPECT_EQ(stepsim({"run", g, "other.yaml"}).output,
            "error: run: unexpected argument 'other.yaml' (usage: stepsim run GRAPH.yaml [OPTIONS])\n");
  EXPECT_EQ(stepsim({"ops", "extra"}).output,
            "error: ops: unexpected argument 'extra' (usage: stepsim ops [OPTIONS])\n");
  EXPECT_EQ(stepsim({"build"}).output, "error: build needs a layer name (see stepsim layers)\n");
  EXPECT_EQ(stepsim({"downtile", g}).output, "error: downtile needs --tile T (T >= 1)\n");
  // A token string that starts with '-' is a value, not an option.
  CliRun neg = stepsim({"eval", "Map", "--param", "fn=silu", "--in", "-1 2 S1 D"});
  EXPECT_NE(neg.output.find("stream element 0"), std::string::npos) << neg.output;
  EXPECT_EQ(neg.output.find("unknown option"), std::string::npos) << neg.output;
}

TEST_F(Cli, IntegerOptionsAreSixtyFourBitAndRangeChecked) {
  const std::string g = write("good.yaml", kGood);
  const std::string shuffle = "error: --shuffle expects a non-negative integer in 0..18446744073709551615, got '";
  for (const std::string v : {"-1", "abc", "18446744073709551616", "1e3", " 1", "0x10"}) {
    CliRun r = stepsim({"run", g, "--shuffle", v});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.output, shuffle + v + "'\n");
  }
  EXPECT_EQ(stepsim({"run", g, "--shuffle", "18446744073709551615"}).status, 0);
  // --outputs: rejected up front, before anything is allocated (this used to run for a minute).
  const auto t0 = std::chrono::steady_clock::now();
  CliRun many = stepsim({"eval", "Partition", "--param", "rank=0", "--in", "1 2 S1 D", "--in", "sel={0} {1} S1 D",
                         "--outputs", "100000"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(many.status, 1);
  EXPECT_EQ(many.output, "error: --outputs expects an integer in 1..256, got '100000'\n");
  for (const std::string v : {"0", "-3", "257", "99999999999999999999999", "x"})
    EXPECT_EQ(stepsim({"eval", "Map", "--param", "fn=silu", "--in", "T[16x64] D", "--outputs", v}).output,
              "error: --outputs expects an integer in 1..256, got '" + v + "'\n");
  CliRun ok = stepsim(
      {"eval", "Partition", "--param", "rank=0", "--in", "1 2 S1 D", "--in", "sel={0} {1} S1 D", "--outputs", "256"});
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("out255: D"), std::string::npos) << ok.output;
  // downtile --tile: the option is named, not the library function that read it.
  for (const std::string v : {"abc", "0", "-16", "65537", "99999999999999999999999"}) {
    CliRun r = stepsim({"downtile", g, "--tile", v});
    EXPECT_EQ(r.output, "error: --tile expects an integer in 1..65536, got '" + v + "'\n");
    expect_no_library_text(r);
  }
}

TEST_F(Cli, OptionErrorsNeverShowLibraryText) {
  const std::string g = write("good.yaml", kGood);
  for (const auto& args : std::vector<std::vector<std::string>>{{"run", g, "--report"},
                                                                {"run", g, "--report="},
                                                                {"run", g, "--vcd=1"},
                                                                {"run", g, "--mode", "a", "--mode", "b"},
                                                                {"run", g, "--shuffle", "1x"},
                                                                {"eval"},
                                                                {"sweep", g, "--set"},
                                                                {"run", "-"},
                                                                {"run", g, "--=x"},
                                                                {"run", g, "-"},
                                                                {"analyze", g, "--json"},
                                                                {"downtile", g, "--tile", "1.5"}}) {
    CliRun r = stepsim(args);
    EXPECT_GE(r.status, 1) << r.output;
    EXPECT_LE(r.status, 2) << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << r.output;
    expect_no_library_text(r);
  }
}

}  // namespace
