// Loading plugins: every failure mode gives its exact error; old and new minors load; the
// combinators and the documented C example work through the registry.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "rematkit/plugin_host/backend_kernel.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/primitive_params.hpp"
#include "rematkit/autodiff/residual_report.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

std::string fixture(const std::string& name) { return std::string(REMATKIT_FIXTURE_DIR) + "/librk_fixture_" + name + ".so"; }

std::string load_error(PluginRegistry& registry, const std::string& path) {
  try {
    registry.load(path);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "no error";
}

TEST(PluginRegistry, DefaultDiscoveryFindsThePolicyPlugins) {
  PluginRegistry registry;
  registry.discover({});
  std::vector<std::string> names;
  for (const PluginInfo& p : registry.plugins()) names.push_back(p.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "jax-policies"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "policy-combinators"), names.end());
  for (const char* policy : {"nothing_saveable", "dots_with_no_batch_dims_saveable", "save_and_offload_only_these_names",
                             "any_of", "all_of", "not_", "save_if_bytes_at_least"})
    EXPECT_TRUE(registry.policies().contains(policy)) << policy;
}

TEST(PluginRegistry, NotASharedLibrary) {
  const std::string path = temp_dir() + "/libnot_a_library.so";
  std::ofstream(path) << "this is text, not ELF\n";
  PluginRegistry registry;
  const std::string error = load_error(registry, path);
  EXPECT_EQ(error.rfind(path + ": not a loadable plugin library (", 0), 0u) << error;
}

TEST(PluginRegistry, EachFailureModeHasItsMessage) {
  PluginRegistry registry;
  EXPECT_EQ(load_error(registry, fixture("no_entry")),
            fixture("no_entry") + ": no rk_plugin_get_api symbol, so it is not a rematkit plugin");
  EXPECT_EQ(load_error(registry, fixture("null_table")), fixture("null_table") + ": rk_plugin_get_api returned no plugin table");
  EXPECT_EQ(load_error(registry, fixture("abi_major_2")),
            fixture("abi_major_2") + ": plugin ABI 2.0 is incompatible with this rematkit's ABI 1.8 (the major "
                                     "versions differ; rebuild the plugin against these headers)");
  EXPECT_EQ(load_error(registry, fixture("init_error")),
            fixture("init_error") + ": plugin 'fixture-init-error' failed to initialize: failed precondition: needs a "
                                    "device this machine does not have");
  EXPECT_EQ(load_error(registry, temp_dir() + "/missing.so").find(temp_dir() + "/missing.so: not a loadable plugin library"),
            0u);
  EXPECT_TRUE(registry.plugins().empty());
  EXPECT_TRUE(registry.policies().empty());
}

TEST(PluginRegistry, TheSameNameTwiceIsRejectedWithoutATrace) {
  PluginRegistry registry;
  registry.load(fixture("duplicate_a"));
  EXPECT_EQ(load_error(registry, fixture("duplicate_b")),
            fixture("duplicate_b") + ": policy 'fixture_duplicate' of plugin 'fixture-duplicate-b' is already defined by "
                                     "plugin 'fixture-duplicate-a' (" + fixture("duplicate_a") + ")");
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0].name, "fixture-duplicate-a");
  registry.load(fixture("duplicate_a"));  // the same file again: nothing happens
  EXPECT_EQ(registry.plugins().size(), 1u);
}

// OpenMP threads (oneDNN's) are asked to sleep rather than spin beside oneTBB's workers, from
// before the first plugin loads; a user's own choice stands. (libgomp reads it when it loads.)
TEST(PluginRegistry, AsksOpenMpThreadsToSleepUnlessTheUserChose) {
  const char* before = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = before ? before : "";
  unsetenv("OMP_WAIT_POLICY");
  PluginRegistry fresh;
  fresh.load(fixture("duplicate_a"));
  const char* chosen = std::getenv("OMP_WAIT_POLICY");
  EXPECT_STREQ(chosen ? chosen : "(unset)", "PASSIVE");
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  PluginRegistry again;
  again.load(fixture("duplicate_a"));
  EXPECT_STREQ(std::getenv("OMP_WAIT_POLICY"), "ACTIVE");
  if (before) setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  else unsetenv("OMP_WAIT_POLICY");
}

TEST(PluginRegistry, OlderAndNewerMinorsLoad) {
  PluginRegistry registry;
  registry.load(fixture("older_minor"));
  registry.load(fixture("newer_minor"));
  ASSERT_EQ(registry.plugins().size(), 2u);
  EXPECT_EQ(registry.plugins()[0].abi_minor, 0);
  EXPECT_EQ(registry.plugins()[1].abi_minor, 9);
  // Both policies work: they save everything.
  for (const char* name : {"fixture_older_minor", "fixture_newer_minor"}) {
    const Params none;
    const std::vector<Type> types{Type{}};
    EXPECT_EQ(registry.policies().parse(name, {})->decide(EquationView{"sin", none, types, types}).decision,
              Decision::kSaveable);
  }
}

TEST(PluginRegistry, DirectoriesListProblemsAndLoadTheRest) {
  PluginRegistry registry;
  registry.load_directory(REMATKIT_FIXTURE_DIR);
  std::vector<std::string> loaded, broken;
  for (const PluginInfo& p : registry.plugins()) loaded.push_back(p.name);
  for (const PluginProblem& p : registry.problems()) broken.push_back(p.file);
  EXPECT_EQ(loaded, (std::vector<std::string>{"fixture-duplicate-a", "fixture-newer-minor", "fixture-older-minor"}));
  EXPECT_EQ(broken, (std::vector<std::string>{fixture("abi_major_2"), fixture("duplicate_b"), fixture("init_error"),
                                              fixture("no_entry"), fixture("null_table")}));
}

TEST(PluginRegistry, PluginPathComesFirst) {
  const std::string dir = temp_dir();
  ::setenv("REMATKIT_PLUGIN_PATH", (dir + ":/no/such/folder").c_str(), 1);
  const std::vector<std::string> dirs = default_plugin_directories();
  ::unsetenv("REMATKIT_PLUGIN_PATH");
  ASSERT_FALSE(dirs.empty());
  EXPECT_EQ(dirs[0], dir);
}

TEST(PluginRegistry, TheDocumentedCExampleWorks) {
  // Built by CMake from plugins/examples (docs/plugins.md shows the same as one compiler command).
  PluginRegistry registry;
  registry.discover({REMATKIT_EXAMPLE_PLUGIN});
  LinearizeOptions options;
  options.policies = &registry.policies();
  options.policy = "save_only_these_primitives('cos')";
  // sin(sin(x)) checkpointed as a whole with the example policy saving cos: both cos coefficients.
  const Program p = parse_program("{ lambda ; x:f32[]. let a:f32[] = sin x; b:f32[] = sin a in (b,) }", "p");
  std::vector<std::string> lines;
  for (const std::string& line : residual_lines(linearize(p, options))) lines.push_back(line.substr(0, line.find(" from ")));
  EXPECT_EQ(lines, (std::vector<std::string>{"f32[] output of cos", "f32[] output of cos"}));
  try {
    registry.policies().parse("save_only_these_primitives()", {});
    FAIL() << "no arguments accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "<program>: save_only_these_primitives: needs primitive names, e.g. ('cos', 'sin')");
  }
}

// The combinators, on single equations.
PolicyAnswer ask(const std::string& spec, const std::string& prim, Shape out_shape = {}) {
  const Params none;
  const std::vector<Type> in{Type{}};
  const std::vector<Type> out{Type{DType::kF32, std::move(out_shape), MemorySpace::kDevice}};
  return test_policies().parse(spec, {})->decide(EquationView{prim, none, in, out});
}

TEST(Combinators, ThreeValuedLogic) {
  const std::string off = "offload_dot_with_no_batch_dims('device', 'pinned_host')";
  const Params dims = dot_general_params(DotDims{{0}, {0}, {}, {}});
  const std::vector<Type> types{Type{}};
  auto decide = [&](const std::string& spec, const std::string& prim, const Params& params) {
    return test_policies().parse(spec, {})->decide(EquationView{prim, params, types, types}).decision;
  };
  EXPECT_EQ(decide("any_of(nothing_saveable, save_cos_only)", "cos", {}), Decision::kSaveable);
  EXPECT_EQ(decide("any_of(nothing_saveable, save_cos_only)", "sin", {}), Decision::kRecompute);
  EXPECT_EQ(decide("any_of(nothing_saveable, " + off + ")", "dot_general", dims), Decision::kOffloadable);
  EXPECT_EQ(decide("any_of(dots_saveable, " + off + ")", "dot_general", dims), Decision::kSaveable);
  EXPECT_EQ(decide("all_of(dots_saveable, save_cos_only)", "dot_general", dims), Decision::kRecompute);
  EXPECT_EQ(decide("all_of(everything_saveable, save_cos_only)", "cos", {}), Decision::kSaveable);
  EXPECT_EQ(decide("all_of(everything_saveable, " + off + ")", "dot_general", dims), Decision::kOffloadable);
  EXPECT_EQ(decide("not_(save_cos_only)", "cos", {}), Decision::kRecompute);
  EXPECT_EQ(decide("not_(save_cos_only)", "sin", {}), Decision::kSaveable);
  EXPECT_EQ(decide("not_(not_(save_cos_only))", "cos", {}), Decision::kSaveable);
}

TEST(Combinators, SizeRule) {
  // f32[16] is 64 bytes.
  EXPECT_EQ(ask("save_if_bytes_at_least(everything_saveable, 64)", "sin", {16}).decision, Decision::kSaveable);
  EXPECT_EQ(ask("save_if_bytes_at_least(everything_saveable, 65)", "sin", {16}).decision, Decision::kRecompute);
  EXPECT_EQ(ask("save_if_bytes_at_least(nothing_saveable, 0)", "sin", {16}).decision, Decision::kRecompute);
  try {
    ask("save_if_bytes_at_least(everything_saveable, 'big')", "sin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "<program>: save_if_bytes_at_least: takes a policy and a byte count, e.g. "
                                     "save_if_bytes_at_least(dots_saveable, 4096)");
  }
}

TEST(Combinators, ChangeResidualsAsTheirPartsSay) {
  // sin(sin(x)) under any_of(save_cos_only, nothing_saveable) keeps what save_cos_only keeps.
  const Program p = load_program(data_dir() + "/residual-cases/test_remat_custom_policy_save_cos.jaxpr");
  EXPECT_EQ(residual_lines(linearize_with(p, "any_of(save_cos_only, nothing_saveable)")).size(), 2u);
  // not_(everything_saveable) is nothing_saveable: only the argument is kept.
  const std::vector<std::string> lines = residual_lines(linearize_with(p, "not_(everything_saveable)"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "f32[] from the argument x");
}

}  // namespace
}  // namespace rematkit::testing

namespace rematkit::testing {
namespace {

// Runs a neg kernel of `backend` on two threads at once, 30 times each; the first error either
// reports ("" if none).
std::string run_on_two_threads(const std::string& plugin, const std::string& backend) {
  PluginRegistry registry;
  registry.load(plugin);
  const Type t{DType::kF32, {8}};
  BackendInstance first(registry, backend), second(registry, backend);
  const auto a = first.prepare(Prim::kNeg, {}, {t}, {t}, "neg a");
  const auto b = second.prepare(Prim::kNeg, {}, {t}, {t}, "neg b");
  std::string errors[2];
  auto loop = [&](const PreparedKernel& kernel, std::string& error) {
    std::vector<float> in(8, 1.0f), out(8);
    try {
      for (int i = 0; i < 30; ++i) kernel.execute_allocating_workspace({in.data()}, {out.data()});
    } catch (const Error& e) {
      error = e.what();
    }
  };
  std::thread one(loop, std::cref(*a), std::ref(errors[0])), two(loop, std::cref(*b), std::ref(errors[1]));
  one.join();
  two.join();
  return errors[0].empty() ? errors[1] : errors[0];
}

TEST(BackendThreadSafety, ABackendWithoutTheFlagRunsOneExecuteAtATime) {
  EXPECT_EQ(run_on_two_threads(REMATKIT_TEST_SERIAL_BACKEND, "fixture_serial"), "");
}

TEST(BackendThreadSafety, TheFixtureSeesOverlapsWhereTheFlagAllowsThem) {
  // The control: the same backend declared thread-safe is called from both threads at once.
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread";
  EXPECT_NE(run_on_two_threads(REMATKIT_TEST_PARALLEL_BACKEND, "fixture_parallel").find("two executes at once"),
            std::string::npos);
}

}  // namespace
}  // namespace rematkit::testing
