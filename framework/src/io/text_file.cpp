#include "rematkit/io/text_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rematkit/ir/error.hpp"

namespace rematkit {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path + ": cannot open the " + what);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) fail(path + ": cannot read the " + what);
  return buffer.str();
}

void write_text_file(const std::string& path, const std::string& text, const std::string& what) {
  // The temporary file is in the same folder, so the rename stays on one file system.
  const std::filesystem::path target(path);
  std::string temporary = (target.parent_path() / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(temporary.data());
  if (fd < 0) fail(path + ": cannot write the " + what);
  bool written = false;
  if (FILE* out = fdopen(fd, "wb")) {
    written = std::fwrite(text.data(), 1, text.size(), out) == text.size();
    written = std::fflush(out) == 0 && fsync(fd) == 0 && written;
    written = std::fclose(out) == 0 && written;
  } else {
    close(fd);
  }
  // mkstemp makes the file private (0600); give it what a new file would have.
  const mode_t mask = umask(0);
  umask(mask);
  written = written && chmod(temporary.c_str(), 0666 & ~mask) == 0;
  if (!written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    fail(path + ": cannot write the " + what);
  }
}

namespace {

// Why files cannot be made in `folder`, or "".
std::string folder_problem(const std::filesystem::path& folder) {
  std::error_code ec;
  const std::filesystem::path shown = folder.empty() ? std::filesystem::path(".") : folder;
  if (!std::filesystem::exists(shown, ec)) return shown.string() + " does not exist";
  if (!std::filesystem::is_directory(shown, ec)) return shown.string() + " is not a folder";
  if (access(shown.c_str(), W_OK | X_OK) != 0) return shown.string() + " is not writable";
  return "";
}

}  // namespace

std::string unwritable_file_reason(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return path + ": cannot write the " + what + ": it is a folder";
  const std::string problem = folder_problem(std::filesystem::path(path).parent_path());
  return problem.empty() ? "" : path + ": cannot write the " + what + ": " + problem;
}

std::string unwritable_folder_reason(const std::string& folder, const std::string& what) {
  std::error_code ec;
  // The nearest folder that exists must take new entries (create_directories makes the rest).
  std::filesystem::path existing = std::filesystem::absolute(folder, ec);
  while (!existing.empty() && !std::filesystem::exists(existing, ec) && existing != existing.parent_path())
    existing = existing.parent_path();
  const std::string problem = folder_problem(existing);
  return problem.empty() ? "" : folder + ": cannot write the " + what + ": " + problem;
}

}  // namespace rematkit
