// Opening the files a user names (graphs, presets, tensor .npy files, trace CSV files) so that a
// wrong kind of file is an error at once: a folder, a FIFO nobody writes to (open() would wait for
// ever), a device such as /dev/zero (a read would never end) or a file too large to be an input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace stepsim {

// Throws std::invalid_argument ("cannot open WHAT 'PATH': REASON") unless `path` is, after
// following symbolic links, a regular file (or, with `allow_fifo`, a FIFO: a graph given as
// `<(command)`) of at most `max_bytes` bytes; `why_max` (if any) ends the message of a file too
// large, saying where the limit comes from.
void check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes, bool allow_fifo = false,
                      const std::string& why_max = "");

// The whole text of an input file checked as above; a FIFO is read up to `max_bytes` bytes.
std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            bool allow_fifo = false, const std::string& why_max = "");

// The file of a built-in YAML (a preset, a technology table) or a user's: `name_or_path` itself
// when it exists, else DIR/NAME.yaml. Throws std::invalid_argument ("unknown WHAT 'NAME'; known
// PLURAL: a, b") otherwise, the names from `known` (called only then).
std::string named_yaml_file(const std::string& name_or_path, const std::string& dir, const std::string& what,
                            const std::string& plural, const std::function<std::vector<std::string>()>& known);

// The names (file names without ".yaml") of the YAML files in `dir`, sorted; none if there is no
// such folder. The built-in presets and HBM devices are listed so.
std::vector<std::string> yaml_file_names(const std::string& dir);

// The largest graph or preset file read (a graph of 10^6 nodes is about 100 MB of YAML).
inline constexpr uint64_t kMaxTextInputBytes = uint64_t(1) << 30;

}  // namespace stepsim
