#include "scripts/cli/python_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

// Set by CMake when the Python package is built (STEPSIM_PYTHON=ON).
#ifndef STEPSIM_PYTHON_EXECUTABLE
#define STEPSIM_PYTHON_EXECUTABLE ""
#endif
#ifndef STEPSIM_PYTHON_DIR
#define STEPSIM_PYTHON_DIR ""
#endif

namespace stepsim {

bool runs_in_python(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  if (args[0] == "dse" || args[0] == "serve") return true;
  if (args[0] != "sweep") return false;
  return std::any_of(args.begin() + 1, args.end(), [](const std::string& a) {
    return a.rfind("--workers", 0) == 0 || a.rfind("--slurm", 0) == 0;
  });
}

int run_in_python(const std::vector<std::string>& args, std::ostream& err) {
  const std::string python = STEPSIM_PYTHON_EXECUTABLE, package_dir = STEPSIM_PYTHON_DIR;
  if (python.empty()) {
    err << "error: stepsim " << args[0]
        << " runs in the Python package, which this build leaves out (build with -DSTEPSIM_PYTHON=ON: "
           "bash scripts/setup.sh all)\n";
    return 1;
  }
  // The package of this build tree; an installed stepsim finds it in dist-packages instead.
  struct stat st{};
  if (!package_dir.empty() && stat(package_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = package_dir + (old && *old ? ":" + std::string(old) : "");
    setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::vector<std::string> words = {python, "-m", "stepsim"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  err.flush();
  execv(python.c_str(), argv.data());
  err << "error: cannot start " << python << ": " << std::strerror(errno) << "\n";
  return 1;
}

}  // namespace stepsim
