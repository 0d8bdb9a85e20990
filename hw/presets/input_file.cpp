#include "hw/presets/input_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace stepsim {

namespace {

[[noreturn]] void cannot_open(const std::string& path, const std::string& what, const std::string& why) {
  throw std::invalid_argument("cannot open " + what + " '" + path + "': " + why);
}

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "it is a folder";
  if (S_ISFIFO(mode)) return "it is a FIFO, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "it is a device, not a regular file";
  if (S_ISSOCK(mode)) return "it is a socket, not a regular file";
  return "it is not a regular file";
}

}  // namespace

void check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes, bool allow_fifo,
                      const std::string& why_max) {
  struct stat st {};
  if (path.find('\0') != std::string::npos) cannot_open(path, what, "the name holds a NUL character");
  if (stat(path.c_str(), &st) != 0) cannot_open(path, what, std::strerror(errno));
  if (S_ISFIFO(st.st_mode) && allow_fifo) return;
  if (!S_ISREG(st.st_mode)) cannot_open(path, what, kind_of(st.st_mode));
  if (uint64_t(st.st_size) > max_bytes)
    cannot_open(
        path, what,
        "it has " + std::to_string(st.st_size) + " bytes (at most " + std::to_string(max_bytes) + why_max + ")");
}

std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes, bool allow_fifo,
                            const std::string& why_max) {
  check_input_file(path, what, max_bytes, allow_fifo, why_max);
  std::ifstream f(path, std::ios::binary);
  if (!f) cannot_open(path, what, std::strerror(errno));
  std::string text;
  char buf[1 << 16];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, size_t(f.gcount()));
    if (text.size() > max_bytes)
      cannot_open(path, what, "it has more than " + std::to_string(max_bytes) + " bytes" + why_max);
  }
  if (f.bad()) cannot_open(path, what, "a read failed");
  return text;
}

std::string named_yaml_file(const std::string& name_or_path, const std::string& dir, const std::string& what,
                            const std::string& plural, const std::function<std::vector<std::string>()>& known) {
  if (std::filesystem::exists(name_or_path)) return name_or_path;
  const std::string path = dir + "/" + name_or_path + ".yaml";
  if (std::filesystem::exists(path)) return path;
  std::string names;
  for (const std::string& n : known()) names += (names.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown " + what + " '" + name_or_path + "'; known " + plural + ": " + names);
}

std::vector<std::string> yaml_file_names(const std::string& dir) {
  std::vector<std::string> names;
  if (std::filesystem::is_directory(dir))
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace stepsim
