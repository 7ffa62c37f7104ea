// The rematkit program run as a user runs it, for the CLI tests: a scratch folder per test, the
// command's exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace rematkit::testing {

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (std::filesystem::temp_directory_path() / "rematkit-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  // Standard input is empty unless `stdin_file` names a file to read it from.
  CliRun run(const std::string& args, const std::string& stdin_file = "/dev/null") {
    return run_command(std::string(REMATKIT_CLI) + " " + args, stdin_file);
  }

  // Any shell command (mpirun of rematkit, say) as run() runs rematkit: exit code -1 when a signal
  // ended it.
  CliRun run_command(const std::string& command, const std::string& stdin_file = "/dev/null") {
    const std::filesystem::path out = dir_ / "stdout", err = dir_ / "stderr";
    const std::string cmd = command + " <" + stdin_file + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    CliRun r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_text(out.string());
    r.err = read_text(err.string());
    return r;
  }

  // Exit code 2 and exactly one line on stderr containing `needle`.
  void expect_bad_input(const std::string& args, const std::string& needle) {
    SCOPED_TRACE(args);
    const CliRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("rematkit: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }

  std::filesystem::path dir_;
};

// A sweep's JSON rows without what differs from run to run: the timings and what follows from them.
inline nlohmann::json without_timings(nlohmann::json rows) {
  for (nlohmann::json& row : rows)
    for (const char* timing : {"median_ms", "min_ms", "max_ms", "median_low_ms", "median_high_ms", "samples_ms",
                               "versus_baseline", "machine_load", "process_peak_rss"})
      row.erase(timing);
  return rows;
}

}  // namespace rematkit::testing
