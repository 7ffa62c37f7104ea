// write_text_file is atomic: a writer killed in the middle of a large write leaves the old file as
// it was, never a part of the new one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rematkit/io/text_file.hpp"
#include "support/test_support.hpp"

namespace rematkit {
namespace {

namespace fs = std::filesystem;

// A temporary file of write_text_file's beside `target` (".NAME.XXXXXX"), if one is there.
bool temporary_beside(const fs::path& target) {
  for (const auto& entry : fs::directory_iterator(target.parent_path()))
    if (entry.path().filename().string().rfind("." + target.filename().string() + ".", 0) == 0) return true;
  return false;
}

TEST(AtomicWrite, AWriterKilledMidWriteLeavesTheOldFileWhole) {
  const fs::path target = fs::path(rematkit::testing::temp_dir()) / "rows.csv";
  bool interrupted = false;
  // Kill the writer once its temporary file exists; a disk fast enough to finish first gets a
  // bigger write next time.
  for (size_t bytes = size_t{64} << 20; bytes <= (size_t{1} << 30) && !interrupted; bytes *= 2) {
    for (const auto& entry : fs::directory_iterator(target.parent_path())) fs::remove(entry.path());
    std::ofstream(target) << "old,file\n";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      write_text_file(target.string(), std::string(bytes, 'x'), "sweep output");
      _exit(0);
    }
    while (!temporary_beside(target) && waitpid(pid, nullptr, WNOHANG) == 0) usleep(200);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    interrupted = WIFSIGNALED(status);
    // Killed: the old file, whole. Finished first: the new one, whole.
    if (interrupted) EXPECT_EQ(rematkit::testing::read_text(target.string()), "old,file\n") << bytes << " bytes";
    else EXPECT_EQ(fs::file_size(target), bytes);
  }
  EXPECT_TRUE(interrupted) << "every write finished before it could be killed";
  // Left to finish, the new text replaces the old one whole.
  write_text_file(target.string(), "new,file\n", "sweep output");
  EXPECT_EQ(rematkit::testing::read_text(target.string()), "new,file\n");
}

}  // namespace
}  // namespace rematkit
