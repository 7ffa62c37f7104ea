// What a sweep names is checked before anything runs, and each mistake is placed at its line in
// the sweep file with the names it was probably meant to be.
#include "rematkit/sweep/sweep_checks.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "rematkit/ir/error.hpp"
#include "support/test_support.hpp"

namespace rematkit::sweep {
namespace {

const std::string kHead = "models:\n  - name: tiny\n    mlp: {input: 3, widths: [2], batch: 1}\n";

std::string check_error(const std::string& yaml, const std::string& source = "s.yaml") {
  try {
    check_sweep(parse_sweep(yaml, source), default_plugins());
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "(no error)";
}

TEST(SweepChecks, AMisspeltPolicyIsPlacedAtItsLineWithTheNameMeant) {
  EXPECT_EQ(check_error(kHead + "policies: [everything_saveable, nothing_savable]\nbackends: [reference]\n"),
            "s.yaml:4:33: unknown policy 'nothing_savable' (did you mean 'nothing_saveable'?)");
  // A policy's arguments are checked too, and budget(X) is read as the solver reads it.
  EXPECT_EQ(check_error(kHead + "policies:\n  - save_from_both_policies(dots_saveable, bogus)\nbackends: [reference]\n")
                .rfind("s.yaml:5:5: save_from_both_policies: unknown policy 'bogus'", 0),
            0u);
  EXPECT_NE(check_error(kHead + "policies: [budget(lots)]\nbackends: [reference]\n").find("s.yaml:4:12: "), std::string::npos);
  EXPECT_EQ(check_error(kHead + "policies: [budget(0.5), \"budget(64MiB)\", dots_saveable]\nbackends: [reference]\n"),
            "(no error)");
}

TEST(SweepChecks, TheDefaultSweepNamesOnlyWhatIsInstalled) {
  const SweepConfig config = parse_sweep(default_sweep_yaml(), "<default sweep>");
  if (!default_plugins().backend("onednn")) GTEST_SKIP() << "built without the oneDNN backend the default sweep names";
  EXPECT_NO_THROW(check_sweep(config, default_plugins()));
  EXPECT_TRUE(config.auto_repetitions);  // its rounds stop when the intervals are narrow
}

TEST(SweepChecks, AnUnknownBackendIsPlacedAtItsList) {
  const std::string message = check_error(kHead + "policies: [dots_saveable]\nbackends: [reference, \"highwya,reference\"]\n");
  EXPECT_EQ(message.rfind("s.yaml:5:23: unknown backend 'highwya' (did you mean 'highway'?) (available: ", 0), 0u) << message;
}

TEST(SweepChecks, ABackendOptionIsCheckedAtItsEntry) {
  if (!default_plugins().backend("onednn")) GTEST_SKIP() << "onednn is not built";
  const std::string head = kHead + "policies: [dots_saveable]\nbackends: [reference, \"onednn,reference\"]\n";
  const std::string fine = head + "backend_options: [onednn.weights_layout=as_it_lies]\n";
  EXPECT_EQ(check_error(fine), "(no error)");
  const SweepConfig config = parse_sweep(fine, "s.yaml");
  EXPECT_TRUE(backend_options_of(config, 0, default_plugins()).backend_options.empty());  // reference alone
  const BackendOptions second = backend_options_of(config, 1, default_plugins());
  ASSERT_EQ(second.backend_options.size(), 1u);
  EXPECT_EQ(second.backend_options[0].name, "weights_layout");
  EXPECT_EQ(second.preference, (std::vector<std::string>{"onednn", "reference"}));
  const std::string bad_value = check_error(head + "backend_options: [onednn.num_threads=1, onednn.weights_layout=sideways]\n");
  EXPECT_EQ(bad_value.rfind("s.yaml:6:41: backend 'onednn' could not start: the onednn backend takes ", 0), 0u) << bad_value;
  EXPECT_EQ(check_error(head + "backend_options: [highway.x=1]\n"),
            "s.yaml:6:19: backend option highway.x is for a backend in none of the lists");
  EXPECT_EQ(check_error(head + "backend_options: [weights_layout]\n"),
            "s.yaml:6:19: backend option 'weights_layout': write it as BACKEND.NAME=VALUE, e.g. "
            "onednn.weights_layout=as_it_lies");
}

TEST(SweepChecks, AProgramModelIsReadBeforeTheRun) {
  const std::string dir = rematkit::testing::temp_dir();
  std::ofstream(dir + "/bad.jaxpr") << "{ lambda ; w:f32[8]. let a:f32[8] = sinn w in (a,) }";
  const std::string yaml = "models:\n  - program: {file: missing.jaxpr}\npolicies: [dots_saveable]\nbackends: [reference]\n";
  const std::string missing = check_error(yaml, dir + "/s.yaml");
  EXPECT_EQ(missing, dir + "/s.yaml:2:21: " + dir + "/missing.jaxpr: cannot open the program file");
  const std::string bad = check_error("models:\n  - program: {file: bad.jaxpr}\npolicies: [dots_saveable]\nbackends: [reference]\n",
                                      dir + "/s.yaml");
  EXPECT_EQ(bad.rfind(dir + "/s.yaml:2:21: " + dir + "/bad.jaxpr:1:", 0), 0u) << bad;
  EXPECT_NE(bad.find("unknown primitive 'sinn'"), std::string::npos) << bad;
}

TEST(SweepChecks, AProgramModelIsCheckedWithoutDrawingItsInputs) {
  // 1e12 f32 arguments: drawn as doubles, 8 TB, which no machine has. Reading the program, its
  // policy and its wrt needs none of them.
  const std::string dir = rematkit::testing::temp_dir();
  std::ofstream(dir + "/huge.jaxpr") << "{ lambda ; a:f32[1000000,1000000] b:f32[2]. let\n"
                                        "    c:f32[] = reduce_sum[axes=(0, 1)] a\n  in (c,) }\n";
  const std::string tail = "}\npolicies: [dots_saveable]\nbackends: [reference]\n";
  EXPECT_EQ(check_error("models:\n  - program: {file: huge.jaxpr, wrt: [a]" + tail, dir + "/s.yaml"), "(no error)");
  const std::string unknown = check_error("models:\n  - program: {file: huge.jaxpr, wrt: [z]" + tail, dir + "/s.yaml");
  EXPECT_EQ(unknown.rfind(dir + "/s.yaml:2:", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("'z'"), std::string::npos) << unknown;
}

TEST(SweepChecks, APluginThatDoesNotLoadIsPlacedAtItsEntry) {
  const std::string dir = rematkit::testing::temp_dir();
  std::ofstream(dir + "/not_a_plugin.so") << "text, not a shared library";
  const SweepConfig config = parse_sweep(kHead + "policies: [dots_saveable]\nbackends: [reference]\nplugins: [not_a_plugin.so]\n",
                                         dir + "/s.yaml");
  PluginRegistry registry;
  try {
    load_sweep_plugins(config, registry);
    ADD_FAILURE() << "a file that is no library was loaded";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(dir + "/s.yaml:6:11: ", 0), 0u) << message;
    EXPECT_NE(message.find("not_a_plugin.so"), std::string::npos) << message;
  }
}

TEST(SweepChecks, OutputsMustBeWritableBeforeTheRun) {
  const std::string dir = rematkit::testing::temp_dir();
  const SourceLocation where{"s.yaml", 7, 16};
  EXPECT_NO_THROW(check_output_file(dir + "/r.csv", where, "sweep output"));
  EXPECT_NO_THROW(check_output_folder(dir + "/new/charts", where, "sweep charts"));  // made when written
  try {
    check_output_file("/nonexistent/dir/x.csv", where, "sweep output");
    ADD_FAILURE() << "a file in a missing folder was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "s.yaml:7:16: /nonexistent/dir/x.csv: cannot write the sweep output: /nonexistent/dir does not exist");
  }
  try {
    check_output_file(dir, where, "sweep output");
    ADD_FAILURE() << "a folder was accepted as a file";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "s.yaml:7:16: " + dir + ": cannot write the sweep output: it is a folder");
  }
  std::ofstream(dir + "/file") << "x";
  EXPECT_THROW(check_output_folder(dir + "/file/charts", where, "sweep charts"), Error);  // under a file
}

}  // namespace
}  // namespace rematkit::sweep
