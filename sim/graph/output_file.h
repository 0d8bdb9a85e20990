// Every file a command writes (reports, traces, CSV tables, graph files, .npy tensors, logs)
// goes through OutputFile, so that no output is ever a partial file that looks complete:
//
//   * a regular file, or a path that does not exist yet, is written to a temporary file in the
//     same folder and renamed over the path once every byte is written and the file is closed;
//     a symbolic link is followed and its target replaced the same way (the link stays a link);
//   * anything else that is not a folder (a FIFO, a terminal, a device node such as /dev/null)
//     is written directly: renaming over it would replace the node with a regular file;
//   * a folder, a missing parent folder or a failed write, flush or close is an error that names
//     the path and the system's reason, and the temporary file is removed.
//
// SIGXFSZ must be ignored (scripts/cli/main.cpp does) so that a file-size limit shows as a failed write.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace stepsim {

class OutputFile {
 public:
  // `what` names the output in messages ("report", "trace", "sweep table").
  OutputFile(const std::string& path, const std::string& what);
  ~OutputFile();  // not committed: the temporary file is removed, the path is left as it was
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return out_; }
  // Checks every write, closes, and (atomic mode) renames into place. Throws std::runtime_error.
  void commit();
  const std::string& path() const { return path_; }

 private:
  // The stream's buffer, on the file descriptor itself so that a failed write keeps its errno
  // (an ofstream only sets badbit, and by commit() errno may say something else or nothing).
  class FdBuffer : public std::streambuf {
   public:
    FdBuffer() : buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }
    void attach(int fd) { fd_ = fd; }
    bool is_open() const { return fd_ >= 0; }
    int error() const { return error_; }  // errno of the first failed write or close, 0 if none
    bool close();                         // flushes and closes; false on failure (error() says why)

   protected:
    int_type overflow(int_type c) override;
    int sync() override { return drain() ? 0 : -1; }

   private:
    bool drain();  // writes out the buffered bytes
    std::vector<char> buf_;
    int fd_ = -1;
    int error_ = 0;
  };

  [[noreturn]] void fail(const std::string& action, int err);
  void discard();  // closes, removes the temporary file

  std::string path_, what_;
  std::string target_;  // where the content lands: the path, or the target of its symlink
  std::string temp_;    // "": written directly
  FdBuffer buf_;
  std::ostream out_{&buf_};
  bool committed_ = false;
};

// `dir`/`file_name`, where `file_name` comes from the user's input (a tensor's name): it must be
// one plain file name, so that the path stays inside `dir` (no '/', NUL, "." or ".."; not empty).
// Throws std::invalid_argument naming `what`, the name and the folder.
std::string path_in_folder(const std::string& dir, const std::string& file_name, const std::string& what);

// The whole content at once.
void write_output_file(const std::string& path, const std::string& what, const std::string& content);

// A failed command must not leave behind an output from an earlier run that would look like
// this run's: removes `path` if it is a regular file (never a link, FIFO, device or folder) and
// is not `keep` (the command's input). Errors are ignored.
void discard_output_file(const std::string& path, const std::string& keep = "");

}  // namespace stepsim
