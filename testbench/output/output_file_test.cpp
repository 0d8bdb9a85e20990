// OutputFile (sim/graph/output_file.h): what lands where for every kind of path, and that a failed
// write leaves nothing behind that looks complete.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <thread>

#include "sim/graph/output_file.h"
#include "testbench/output/output_util.h"

namespace {

using namespace stepsim_output_test;
using stepsim::discard_output_file;
using stepsim::OutputFile;
using stepsim::write_output_file;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

using OutputFileTest = OutputTest;

TEST_F(OutputFileTest, NewFileIsWrittenWithNothingElseLeft) {
  write_output_file(path("r.json"), "report", "{}\n");
  EXPECT_EQ(read_text(path("r.json")), "{}\n");
  EXPECT_EQ(names_in(dir_), std::set<std::string>{"r.json"});
  // The mode a plain open would give: 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(path("r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST_F(OutputFileTest, RegularFileIsReplacedKeepingItsMode) {
  write_text(path("r.json"), "old content, longer than the new one\n");
  ::chmod(path("r.json").c_str(), 0640);
  write_output_file(path("r.json"), "report", "new\n");
  EXPECT_EQ(read_text(path("r.json")), "new\n");
  struct stat st {};
  ASSERT_EQ(::stat(path("r.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(names_in(dir_), std::set<std::string>{"r.json"});
}

TEST_F(OutputFileTest, SymlinkKeepsTheLinkAndReplacesItsTarget) {
  fs::create_directories(dir_ / "real");
  write_text(path("real/target.json"), "old\n");
  fs::create_symlink("real/target.json", dir_ / "link.json");  // relative to the link's folder
  write_output_file(path("link.json"), "report", "new\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "link.json")));
  EXPECT_EQ(fs::read_symlink(dir_ / "link.json"), fs::path("real/target.json"));
  EXPECT_EQ(read_text(path("real/target.json")), "new\n");
  EXPECT_EQ(names_in(dir_ / "real"), std::set<std::string>{"target.json"});
  // A link to a link, and a dangling link (its target is created).
  fs::create_symlink("link.json", dir_ / "link2.json");
  write_output_file(path("link2.json"), "report", "newer\n");
  EXPECT_EQ(read_text(path("real/target.json")), "newer\n");
  fs::create_symlink("real/absent.json", dir_ / "dangling.json");
  write_output_file(path("dangling.json"), "report", "made\n");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "dangling.json")));
  EXPECT_EQ(read_text(path("real/absent.json")), "made\n");
}

TEST_F(OutputFileTest, FifoIsWrittenDirectly) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = read_text(path("pipe")); });
  write_output_file(path("pipe"), "report", "through the pipe\n");
  reader.join();
  EXPECT_EQ(received, "through the pipe\n");
  struct stat st {};
  ASSERT_EQ(::lstat(path("pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(names_in(dir_), std::set<std::string>{"pipe"});
}

TEST_F(OutputFileTest, DeviceIsWrittenDirectly) {
  // /dev/null only (never a device whose content matters): it stays a character device.
  write_output_file("/dev/null", "report", "discarded\n");
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(OutputFileTest, FolderIsAnErrorAndNothingIsLeft) {
  fs::create_directories(dir_ / "out");
  EXPECT_EQ(error_of([&] { write_output_file(path("out"), "report", "x"); }),
            "cannot write the report '" + path("out") + "': it is a folder");
  EXPECT_TRUE(fs::is_directory(dir_ / "out"));
  EXPECT_TRUE(fs::is_empty(dir_ / "out"));
  EXPECT_EQ(names_in(dir_), std::set<std::string>{"out"});
  // A link to a folder is a folder too.
  fs::create_directory_symlink("out", dir_ / "link");
  EXPECT_EQ(error_of([&] { write_output_file(path("link"), "trace", "x"); }),
            "cannot write the trace '" + path("link") + "': it is a folder");
}

TEST_F(OutputFileTest, MissingFolderNamesThePathAndTheReason) {
  EXPECT_EQ(
      error_of([&] { write_output_file(path("no/such/r.json"), "report", "x"); }),
      "cannot create a file in the folder of the report '" + path("no/such/r.json") + "': No such file or directory");
  EXPECT_EQ(error_of([&] { write_output_file("", "report", "x"); }), "the report needs a file name");
}

TEST_F(OutputFileTest, UncommittedFileLeavesTheOldContent) {
  write_text(path("r.json"), "old\n");
  {
    OutputFile f(path("r.json"), "report");
    f.stream() << "half of a new report";
  }  // an error before commit(): the destructor removes the temporary file
  EXPECT_EQ(read_text(path("r.json")), "old\n");
  EXPECT_EQ(names_in(dir_), std::set<std::string>{"r.json"});
}

TEST_F(OutputFileTest, SymlinkLoopIsAnError) {
  fs::create_symlink("b", dir_ / "a");
  fs::create_symlink("a", dir_ / "b");
  EXPECT_EQ(error_of([&] { write_output_file(path("a"), "report", "x"); }),
            "cannot write the report '" + path("a") + "': Too many levels of symbolic links");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "a")));
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"a", "b"}));
}

// Under a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored as scripts/cli/main.cpp does) the write fails:
// the error names the file and the reason, and the old file is untouched, no temporary is left.
TEST_F(OutputFileTest, FileSizeLimitIsAWriteErrorWithNothingPartialLeft) {
  write_text(path("r.json"), "old\n");
  const std::string big(1 << 20, 'x');
  const std::string message_file = path("message");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim {
      4096, 4096
    };
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const std::string e = error_of([&] { write_output_file(path("r.json"), "report", big); });
    // The message goes out through a pipe-free channel: a file well under the limit.
    std::FILE* m = std::fopen(message_file.c_str(), "w");
    std::fputs(e.c_str(), m);
    std::fclose(m);
    ::_exit(e.empty() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the write did not fail";
  EXPECT_EQ(read_text(message_file), "cannot write the report '" + path("r.json") + "': File too large");
  EXPECT_EQ(read_text(path("r.json")), "old\n");
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"message", "r.json"}));
}

TEST_F(OutputFileTest, DiscardRemovesOnlyRegularFilesOtherThanTheInput) {
  write_text(path("old.json"), "{}");
  write_text(path("graph.yaml"), "nodes: []");
  fs::create_symlink("graph.yaml", dir_ / "link.yaml");
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  discard_output_file(path("old.json"));
  discard_output_file(path("graph.yaml"), path("graph.yaml"));
  discard_output_file(path("link.yaml"));
  discard_output_file(path("pipe"));
  discard_output_file(path("absent"));
  EXPECT_EQ(names_in(dir_), (std::set<std::string>{"graph.yaml", "link.yaml", "pipe"}));
}

}  // namespace
