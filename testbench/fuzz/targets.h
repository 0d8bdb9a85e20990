// The fuzz targets' bodies (docs/checking.md), shared by the libFuzzer executables
// (fuzz_*.cpp, built with -DSTEPSIM_FUZZ=ON and clang) and by the replay test of the default
// suite (replay_test.cpp), so that a saved input goes through exactly the code that found it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace stepsim::fuzz {

// One input through one parser. Each may throw; outcome() judges what it threw.
using Target = void (*)(const uint8_t* data, size_t size);
void graph(const uint8_t* data, size_t size);   // parse_graph (sim/graph/loader.h)
void tokens(const uint8_t* data, size_t size);  // parse_tokens, to_beats, format round trip (hw/stream/token.h)
void npy(const uint8_t* data, size_t size);     // read_npy_header, read_npy, check_tensor_file (sim/graph/npy.h)
void csv(const uint8_t* data, size_t size);     // read_csv, and the file as trace streams in parse_graph
void preset(const uint8_t* data, size_t size);  // load_preset of a preset file (hw/presets/hardware.h)
void tech(const uint8_t* data, size_t size);    // load_technology of a technology file (hw/presets/tech.h)
void expr(const uint8_t* data, size_t size);    // SymbolTable::parse, then every symbol given a 64-bit value

// Runs `target` on the input. Empty when it returned or threw the tool's clear error: exactly a
// std::invalid_argument or std::runtime_error (not a subclass such as a yaml-cpp exception)
// whose message is free of library text. Otherwise what went wrong, one line (a finding).
std::string outcome(Target target, const uint8_t* data, size_t size);

// The target called NAME (graph, tokens, npy, csv, preset, tech, expr); null if none is.
Target target_named(const std::string& name);

}  // namespace stepsim::fuzz
