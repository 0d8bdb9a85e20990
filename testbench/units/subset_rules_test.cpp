// Mechanical check of the synthesizable-subset rules on hw/units (architecture.md §2,
// ecosystem-notes §4.2, docs/unit-protocol.md):
//  * no dynamic allocation, std containers, strings, std::function, exceptions, virtual
//    dispatch, printing, sc_fifo/sc_event/sc_spawn, SC_THREAD/SC_METHOD, timed or event waits;
//  * only <systemc>, <type_traits>, <cstdint> and hw/units headers are included;
//  * every process is an SC_CTHREAD with a reset (reset_signal_is / async_reset_signal_is);
//  * every process body has exactly one wait() (one clock), inside its while (true) loop;
//  * every unit header (one with an SC_CTHREAD) has an RTL twin rtl/<name>.sv listed in
//    rtl/units.list.
// Code under `#ifndef __SYNTHESIS__` is simulation-only and exempt.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "testbench/units/source_text.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = stepsim::testing_util::kSourceRoot;
using stepsim::testing_util::read_text;

// Removes comments, string literals and `#ifndef __SYNTHESIS__` ... `#endif` (or `#else`) blocks.
std::string synthesizable_text(const std::string& src) {
  std::string out;
  for (size_t i = 0; i < src.size();) {
    if (src.compare(i, 2, "//") == 0) {
      while (i < src.size() && src[i] != '\n') ++i;
    } else if (src.compare(i, 2, "/*") == 0) {
      size_t e = src.find("*/", i + 2);
      i = e == std::string::npos ? src.size() : e + 2;
    } else if (src[i] == '"') {
      out += "\"\"";
      for (++i; i < src.size() && src[i] != '"'; ++i)
        if (src[i] == '\\') ++i;
      ++i;
    } else {
      out += src[i++];
    }
  }
  std::istringstream in(out);
  std::string line, kept;
  int skip = 0;  // nesting depth inside a simulation-only block (0 = keep)
  int depth = 0;
  while (std::getline(in, line)) {
    std::string t = std::regex_replace(line, std::regex("^\\s+"), "");
    const bool sim_only =
        std::regex_search(t, std::regex("^#\\s*(ifndef\\s+__SYNTHESIS__|if\\s+!\\s*defined\\s*\\(?\\s*__SYNTHESIS__)"));
    if (t.rfind("#if", 0) == 0) {
      ++depth;
      if (sim_only && !skip) skip = depth;
      continue;
    }
    if (t.rfind("#else", 0) == 0 && skip == depth) {
      skip = 0;
      continue;
    }
    if (t.rfind("#endif", 0) == 0) {
      if (skip == depth) skip = 0;
      --depth;
      continue;
    }
    if (!skip) kept += line + "\n";
  }
  return kept;
}

std::vector<fs::path> unit_headers() {
  std::vector<fs::path> r;
  for (const auto& e : fs::directory_iterator(kRoot / "hw/units"))
    if (e.path().extension() == ".h") r.push_back(e.path());
  std::sort(r.begin(), r.end());
  return r;
}

// The body of `void name()` (balanced braces), or "" if absent.
std::string function_body(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("void\\s+" + name + "\\s*\\(\\s*\\)\\s*\\{"))) return "";
  size_t i = size_t(m.position(0) + m.length(0));
  int d = 1;
  size_t start = i;
  for (; i < text.size() && d > 0; ++i) {
    if (text[i] == '{') ++d;
    if (text[i] == '}') --d;
  }
  return text.substr(start, i - start - 1);
}

long count_waits(const std::string& body) {
  static const std::regex wait_call("\\bwait\\s*\\(\\s*\\)");
  return long(std::distance(std::sregex_iterator(body.begin(), body.end(), wait_call), std::sregex_iterator()));
}

TEST(SubsetRules, HeadersFound) { EXPECT_GE(unit_headers().size(), 8u); }

TEST(SubsetRules, NoForbiddenConstructs) {
  const std::vector<std::pair<std::string, std::string>> rules = {
      {"\\bnew\\b", "dynamic allocation (new)"},
      {"\\bdelete\\b", "delete"},
      {"\\b(malloc|calloc|realloc)\\s*\\(", "malloc"},
      {"(^|[^.>\\w])free\\s*\\(", "free()"},
      {"std::(vector|map|unordered_map|set|unordered_set|list|deque|string|function|shared_ptr|unique_ptr)\\b",
       "std container / string / std::function / smart pointer"},
      {"\\b(throw|try|catch)\\b", "exceptions"},
      {"\\bvirtual\\b", "virtual dispatch"},
      {"\\b(printf|fprintf|puts)\\s*\\(|std::(cout|cerr|clog)", "printing"},
      {"\\b(sc_fifo|sc_event|sc_spawn|sc_mutex|sc_semaphore)\\b", "sc_fifo/sc_event/sc_spawn"},
      {"\\b(SC_THREAD|SC_METHOD)\\s*\\(", "SC_THREAD/SC_METHOD (units use SC_CTHREAD)"},
      {"\\bwait\\s*\\(\\s*[^)\\s]", "timed or event wait (only wait())"},
      {"\\bgoto\\b", "goto"},
  };
  for (const fs::path& p : unit_headers()) {
    const std::string text = synthesizable_text(read_text(p));
    for (const auto& [re, what] : rules) {
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, std::regex(re)))
          << p.filename() << ": " << what << " in synthesizable code: '" << m.str(0) << "'";
    }
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (std::regex_search(line, m, std::regex("#\\s*include\\s*([<\"][^>\"]+[>\"])"))) {
        const std::string inc = m[1];
        EXPECT_TRUE(inc == "<systemc>" || inc == "<type_traits>" || inc == "<cstdint>" ||
                    inc.rfind("\"hw/units/", 0) == 0)
            << p.filename() << ": include " << inc << " outside the allowed set";
      }
    }
  }
}

TEST(SubsetRules, ProcessesAreClockedThreadsWithResetAndOneWaitPerClock) {
  size_t processes = 0;
  for (const fs::path& p : unit_headers()) {
    const std::string text = synthesizable_text(read_text(p));
    static const std::regex cthread("SC_CTHREAD\\s*\\(\\s*(\\w+)\\s*,\\s*clk_i\\.pos\\(\\)\\s*\\)\\s*;");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), cthread); it != std::sregex_iterator(); ++it) {
      ++processes;
      const std::string fn = (*it)[1];
      // The reset spec follows the SC_CTHREAD (before any other process is declared).
      const std::string after = text.substr(size_t(it->position(0) + it->length(0)));
      const size_t next = after.find("SC_CTHREAD");
      const std::string spec = after.substr(0, next);
      EXPECT_TRUE(
          std::regex_search(spec, std::regex("\\b(async_)?reset_signal_is\\s*\\(\\s*rst_ni\\s*,\\s*false\\s*\\)")))
          << p.filename() << ": process " << fn << " has no active-low reset on rst_ni";
      const std::string body = function_body(text, fn);
      ASSERT_FALSE(body.empty()) << p.filename() << ": no body for process " << fn;
      const auto waits = count_waits(body);
      EXPECT_EQ(waits, 1) << p.filename() << ": process " << fn << " must have exactly one wait() (one per clock)";
      const size_t loop = body.find("while (true)");
      const size_t w = body.find("wait()");
      EXPECT_TRUE(loop != std::string::npos && w != std::string::npos && w > loop)
          << p.filename() << ": process " << fn << ": wait() must sit inside the while (true) loop";
      // The reset section (before the loop) holds no wait and no loop.
      EXPECT_EQ(body.substr(0, loop).find("for ("), std::string::npos)
          << p.filename() << ": process " << fn << ": loops in the reset section";
    }
    EXPECT_EQ(text.find("SC_CTHREAD(") == std::string::npos, text.find("SC_HAS_PROCESS") == std::string::npos)
        << p.filename() << ": a module without a clocked thread";
  }
  EXPECT_GE(processes, 6u);
}

TEST(SubsetRules, EveryUnitHasAnRtlTwin) {
  const std::string list = read_text(kRoot / "rtl/units.list");
  for (const fs::path& p : unit_headers()) {
    const std::string name = p.stem().string();
    if (read_text(p).find("SC_CTHREAD(") == std::string::npos) continue;  // a library header, not a unit
    EXPECT_TRUE(fs::exists(kRoot / "rtl" / (name + ".sv"))) << "rtl/" << name << ".sv missing";
    EXPECT_TRUE(std::regex_search(list, std::regex("(^|\\n)" + name + "(\\s|$)"))) << name << " not in rtl/units.list";
  }
}

// The checker itself: it must flag each kind of violation.
TEST(SubsetRules, CheckerCatchesViolations) {
  const std::string bad =
      "struct X : sc_module {\n"
      "  SC_HAS_PROCESS(X);\n"
      "  X() { SC_CTHREAD(run, clk_i.pos()); }\n"
      "  void run() { int* p = new int; std::vector<int> v; while (true) { wait(); wait(); } }\n"
      "};\n"
      "#ifndef __SYNTHESIS__\n"
      "void debug() { std::cout << 1; }\n"
      "#endif\n";
  const std::string t = synthesizable_text(bad);
  EXPECT_TRUE(std::regex_search(t, std::regex("\\bnew\\b")));
  EXPECT_TRUE(std::regex_search(t, std::regex("std::vector")));
  EXPECT_EQ(t.find("std::cout"), std::string::npos);  // simulation-only block stripped
  EXPECT_FALSE(std::regex_search(t, std::regex("reset_signal_is")));
  const std::string body = function_body(t, "run");
  EXPECT_EQ(count_waits(body), 2);
}

}  // namespace
