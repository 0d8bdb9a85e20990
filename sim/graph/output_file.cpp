#include "sim/graph/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace stepsim {

namespace fs = std::filesystem;

namespace {

std::string reason(int err) { return err ? std::strerror(err) : "write failed"; }

// The path the content lands on: the path itself, or what its symbolic link(s) point to.
std::string follow_links(const std::string& path) {
  std::error_code ec;
  fs::path p = path;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    fs::path link = fs::read_symlink(p, ec);
    if (ec) break;
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  return p.string();
}

}  // namespace

bool OutputFile::FdBuffer::drain() {
  const char* p = pbase();
  while (p < pptr()) {
    const ssize_t n = ::write(fd_, p, size_t(pptr() - p));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (!error_) error_ = n < 0 ? errno : EIO;
      return false;
    }
    p += n;
  }
  setp(buf_.data(), buf_.data() + buf_.size());
  return true;
}

OutputFile::FdBuffer::int_type OutputFile::FdBuffer::overflow(int_type c) {
  if (fd_ < 0 || error_ || !drain()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

bool OutputFile::FdBuffer::close() {
  if (fd_ < 0) return error_ == 0;
  const bool drained = !error_ && drain();
  if (::close(fd_) != 0 && !error_) error_ = errno;
  fd_ = -1;
  return drained && !error_;
}

OutputFile::OutputFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
  if (path.empty()) throw std::runtime_error("the " + what + " needs a file name");
  target_ = follow_links(path);
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(target_, ec)))  // a loop: replacing a link would break it
    throw std::runtime_error("cannot write the " + what + " '" + path + "': " + std::strerror(ELOOP));
  struct stat st {};
  const bool exists = ::stat(target_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    throw std::runtime_error("cannot write the " + what + " '" + path + "': it is a folder");
  if (exists && !S_ISREG(st.st_mode)) {
    // A FIFO, terminal or device: written in place (never replaced by a regular file).
    const int fd = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail("open", errno);
    buf_.attach(fd);
    return;
  }
  const fs::path dir = fs::path(target_).parent_path().empty() ? fs::path(".") : fs::path(target_).parent_path();
  std::string pattern = (dir / ("." + fs::path(target_).filename().string() + ".XXXXXX")).string();
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) fail("create a file in the folder of", errno);
  temp_ = name.data();
  buf_.attach(fd);
  // mkstemp makes the file private (0600); give it the mode a plain open would (or the old file's).
  mode_t mode = 0666;
  if (exists) {
    mode = st.st_mode & 07777;
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode &= ~mask;
  }
  ::fchmod(fd, mode);
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() {
  buf_.close();
  if (!temp_.empty()) ::unlink(temp_.c_str());
  committed_ = true;  // nothing left to clean up
}

void OutputFile::fail(const std::string& action, int err) {
  discard();
  throw std::runtime_error("cannot " + action + " the " + what_ + " '" + path_ + "': " + reason(err));
}

void OutputFile::commit() {
  out_.flush();
  if (!buf_.close() || !out_) fail("write", buf_.error());
  if (!temp_.empty() && ::rename(temp_.c_str(), target_.c_str()) != 0) fail("write", errno);
  committed_ = true;
}

void write_output_file(const std::string& path, const std::string& what, const std::string& content) {
  OutputFile f(path, what);
  f.stream().write(content.data(), std::streamsize(content.size()));
  f.commit();
}

void discard_output_file(const std::string& path, const std::string& keep) {
  if (path.empty()) return;
  std::error_code ec;
  if (!keep.empty() && fs::equivalent(path, keep, ec)) return;
  if (fs::is_regular_file(fs::symlink_status(path, ec))) fs::remove(path, ec);
}

std::string path_in_folder(const std::string& dir, const std::string& file_name, const std::string& what) {
  const bool plain = !file_name.empty() && file_name != "." && file_name != ".." &&
                     file_name.find_first_of(std::string("/\0", 2)) == std::string::npos;
  if (!plain)
    throw std::invalid_argument("cannot write " + what + " '" + file_name + "' in '" + dir +
                                "': its name must be a plain file name that stays inside that folder");
  return (fs::path(dir) / file_name).string();
}

}  // namespace stepsim
