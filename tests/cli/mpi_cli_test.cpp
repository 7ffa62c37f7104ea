// The rematkit program under mpirun (Open MPI, where it was found at build time): a sweep's groups
// spread over the ranks, a parallel model's step a rank per device, grad and compare a rank per
// device, and what every rank does when a rank dies or the ranks disagree.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/cli_fixture.hpp"
#include "support/sharded_steps.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

#ifdef REMATKIT_MPIEXEC

namespace fs = std::filesystem;

// mpirun of rematkit on `ranks` ranks. Open MPI keeps memory to the end on purpose; LeakSanitizer
// (in the sanitizer build) would count it.
std::string mpirun(int ranks) {
  return std::string("env ASAN_OPTIONS=detect_leaks=0 ") + REMATKIT_MPIEXEC + " --allow-run-as-root --oversubscribe -n " +
         std::to_string(ranks) + " " + REMATKIT_CLI;
}

TEST_F(CliTest, ASweepOverMpiRanksGathersTheRowsOfTheWholeSweep) {
  // Three ranks on one node: rank 0 hands the 8 groups to ranks 1 and 2, one at a time (one node),
  // and writes the rows in grid order; they equal a run without MPI in everything but timings.
  const std::string sweep = write("s.yaml", R"yaml(models:
  - name: a
    mlp: {input: 3, widths: [4, 2], batch: 2}
  - name: b
    mlp: {input: 2, widths: [3], batch: 1, remat: whole}
policies: [nothing_saveable, dots_saveable, everything_saveable]
backends: [reference, "highway,reference"]
threads: [1, 2]
repetitions: 2
)yaml");
  const std::string alone = (dir_ / "alone.json").string(), ranks = (dir_ / "ranks.json").string();
  ASSERT_EQ(run("sweep " + sweep + " --json " + alone).exit_code, 0);
  const CliRun on_ranks = run_command(mpirun(3) + " sweep " + sweep + " --json " + ranks);
  ASSERT_EQ(on_ranks.exit_code, 0) << on_ranks.err;
  const std::string& log = on_ranks.err;
  EXPECT_NE(log.find(", rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find(", rank 2"), std::string::npos) << log;
  nlohmann::json a = nlohmann::json::parse(read_text(alone)), b = nlohmann::json::parse(read_text(ranks));
  ASSERT_EQ(a.size(), 2u * 3 * 2 * 2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i]["config"], i + 1);
  EXPECT_EQ(without_timings(a), without_timings(b));
  // A mistake is said once, by rank 0, and every rank exits 2.
  const CliRun bad = run_command(mpirun(3) + " sweep " + write("bad.yaml", "models: [}\n"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(count_of(bad.err, "bad.yaml:1:"), 1u) << bad.err;
}

TEST_F(CliTest, GradOfAnFsdpStepOnFourRanksIsTheSimulatedMeshsBitForBit) {
  // Each rank one device of the (data=2, fsdp=2) mesh, in its own arena; the JSON line (9
  // significant digits: every bit of an f32) is the one grad prints without mpirun, where the
  // devices are threads of one process.
  const std::string step = write("fsdp.jaxpr", with_policy(kFsdpStep, "nothing_saveable"));
  const std::string inputs = write("in.json", R"({"x": [[0.1, 0.2, 0.3, 0.4], [0.5, -0.6, 0.7, 0.8], [0.9, 1.0, -1.1, 1.2],
    [0.3, 0.1, 0.4, 0.1], [0.5, 0.9, 0.2, -0.6], [0.5, 0.3, 0.5, 0.8], [-0.9, 0.7, 0.9, 0.3], [0.2, 0.3, 0.8, 0.4]],
    "w1": [[0.3, -0.2, 0.1, 0.5], [0.2, 0.4, -0.3, 0.1], [0.6, 0.1, 0.2, -0.4], [0.1, 0.3, 0.5, 0.2]],
    "w2": [[0.2, 0.1, -0.5, 0.3], [0.4, -0.2, 0.1, 0.6], [0.1, 0.5, 0.3, -0.1], [-0.3, 0.2, 0.4, 0.1]]})");
  const CliRun alone = run("grad " + step + " --inputs " + inputs);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  auto ranks = [&](int n, const std::string& args) { return run_command(mpirun(n) + " grad " + args); };
  const CliRun planned = ranks(4, step + " --inputs " + inputs + " --plan");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const std::string& said = planned.out;
  EXPECT_EQ(said.substr(said.rfind('{')), alone.out.substr(alone.out.rfind('{'))) << said;
  // What the collectives cost here, for solve --comm-ns-per-byte.
  EXPECT_NE(said.find("collectives: the 4 ranks sent "), std::string::npos) << said;
  EXPECT_NE(said.find(" ns per byte (solve --cost measured --comm-ns-per-byte)\n"), std::string::npos) << said;
  // Every rank's arena reached the peak one device's plan predicts.
  const size_t at = said.find("memory device: predicted peak ");
  ASSERT_NE(at, std::string::npos) << said;
  const std::string predicted = said.substr(at + 30, said.find(' ', at + 30) - at - 30);
  EXPECT_NE(said.find("measured on each of its 4 ranks " + predicted + ", " + predicted + ", " + predicted + ", " + predicted + "\n"),
            std::string::npos)
      << said;
  // Ranks that are not the mesh's devices: one line from rank 0, and every rank exits 2.
  const CliRun three = ranks(3, step + " --inputs " + inputs);
  EXPECT_EQ(three.exit_code, 2);
  const std::string& error = three.err;
  EXPECT_EQ(count_of(error, "rematkit: "), 1u) << error;
  EXPECT_NE(error.find("rematkit: the mesh data=2,fsdp=2 has 4 devices but mpirun started 3 ranks"), std::string::npos) << error;
  // A step over the memory limit: every rank refuses before it allocates; one line, exit 2.
  const CliRun limited = ranks(4, step + " --inputs " + inputs + " --max-memory 100");
  EXPECT_EQ(limited.exit_code, 2);
  const std::string& over = limited.err;
  EXPECT_EQ(count_of(over, "rematkit: "), 1u) << over;
  EXPECT_NE(over.find("is over the memory limit of 100 B"), std::string::npos) << over;
}

// compare of the FSDP step on 4 ranks, a device each: the same table of what each policy keeps as
// the run whose devices are threads, and the gradients the same bytes under both policies.
TEST_F(CliTest, CompareOfAShardedStepRunsARankPerDevice) {
  const std::string step = write("fsdp.jaxpr", with_policy(kFsdpStep, "nothing_saveable"));
  const std::string args = " compare " + step + " --policy nothing_saveable --policy everything_saveable";
  const CliRun threads = run(args);
  ASSERT_EQ(threads.exit_code, 0) << threads.err;
  const CliRun on_ranks = run_command(mpirun(4) + args);
  ASSERT_EQ(on_ranks.exit_code, 0) << on_ranks.err;
  const std::string& ranks = on_ranks.out;
  EXPECT_NE(ranks.find("gradients: the same bytes under every policy (3 argument(s); a rank per device on 4 ranks, twice, "
                       "one policy after another)"),
            std::string::npos)
      << ranks;
  EXPECT_EQ(ranks.substr(0, ranks.find("\ngradients: ")), threads.out.substr(0, threads.out.find("\ngradients: ")));
  EXPECT_EQ(count_of(ranks, "rematkit compare: "), 1u) << ranks;  // rank 0 alone prints
}

// A sweep's parallel models on 2 ranks: each group whose model is a mesh of 2 devices runs on both
// ranks at once, a device each; the rest are handed out. The rows are a run's without MPI (its
// devices threads of one process) in everything but the timings.
TEST_F(CliTest, ASweepsParallelModelsRunARankPerDevice) {
  const std::string sweep = write("s.yaml", R"yaml(models:
  - name: data
    gpt: {layers: 1, batch: 4, sequence: 4, model: 8, heads: 2, vocab: 16, parallel: {data: 2}}
  - name: tensor
    llama: {layers: 1, batch: 2, sequence: 4, model: 16, heads: 4, kv_heads: 2, mlp: 16, vocab: 16, parallel: {tensor: 2}}
  - name: fsdp4
    gpt: {layers: 1, batch: 4, sequence: 4, model: 8, heads: 2, vocab: 16, parallel: {fsdp: 4}}
policies: [everything_saveable, nothing_saveable]
backends: [reference]
repetitions: 1
)yaml");
  const std::string alone = (dir_ / "alone.json").string(), ranks = (dir_ / "ranks.json").string();
  ASSERT_EQ(run("sweep " + sweep + " --json " + alone).exit_code, 0);
  const CliRun on_ranks = run_command(mpirun(2) + " sweep " + sweep + " --json " + ranks);
  ASSERT_EQ(on_ranks.exit_code, 0) << on_ranks.err;
  const std::string& log = on_ranks.err;
  EXPECT_NE(log.find("data on reference, 1 thread(s), a rank per device"), std::string::npos) << log;
  EXPECT_NE(log.find("tensor on reference, 1 thread(s), a rank per device"), std::string::npos) << log;
  EXPECT_NE(log.find("fsdp4 on reference, 1 thread(s), rank 1"), std::string::npos) << log;  // 4 devices: threads
  const nlohmann::json a = nlohmann::json::parse(read_text(alone)), b = nlohmann::json::parse(read_text(ranks));
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(without_timings(a), without_timings(b));
  for (const nlohmann::json& row : b) {
    EXPECT_EQ(row["measured_peak_device"], row["predicted_peak_device"]) << row;
    EXPECT_EQ(row["max_grad_diff"], 0) << row;
    EXPECT_EQ(row["partial"], false) << row;
  }
  EXPECT_GT(b[3]["recompute_comm_bytes"].get<double>(), 0);  // the llama's attention all-reduce, sent again
}

// The pid of the process of rank `rank` running `marker` (in its command line), or -1.
pid_t rank_process(int rank, const std::string& marker) {
  const std::string wanted = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmdline(entry.path() / "cmdline"), environ(entry.path() / "environ");
    const std::string command((std::istreambuf_iterator<char>(cmdline)), {});
    const std::string variables((std::istreambuf_iterator<char>(environ)), {});
    if (command.find(marker) == std::string::npos) continue;
    for (size_t at = 0; at < variables.size();) {
      const size_t end = variables.find('\0', at);
      if (variables.compare(at, (end == std::string::npos ? variables.size() : end) - at, wanted) == 0)
        return static_cast<pid_t>(std::stol(name));
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return -1;
}

// Two groups on 2 ranks, a rank per device: a tiny model, then one whose steps take long on the
// reference backend. Once the first group's rows are on disk, rank 1 is killed (kill -9) in the
// second: the job ends within 30 s, not zero, and the first group's rows stay on disk, marked partial.
TEST_F(CliTest, ARankKilledMidStepEndsTheJobAndTheFinishedRowsStay) {
  const std::string sweep = write("killed.yaml", R"yaml(models:
  - name: first
    gpt: {layers: 1, batch: 2, sequence: 4, model: 8, heads: 2, vocab: 16, parallel: {data: 2}}
  - name: second
    gpt: {layers: 4, batch: 8, sequence: 128, model: 256, heads: 4, vocab: 512, parallel: {tensor: 2}}
policies: [everything_saveable, nothing_saveable]
backends: [reference]
repetitions: 20
)yaml");
  const std::string json = (dir_ / "rows.json").string(), done = (dir_ / "status").string();
  const std::string err = (dir_ / "stderr").string();
  ASSERT_EQ(std::system(("(" + mpirun(2) + " sweep " + sweep + " --json " + json + " >/dev/null 2>" + err +
                         " </dev/null; echo $? >" + done + ".part; mv " + done + ".part " + done + ") &")
                            .c_str()),
            0);
  const auto started = std::chrono::steady_clock::now();
  auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  while (!fs::exists(json) && !fs::exists(done) && waited() < 300) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(fs::exists(done)) << "the sweep ended before a rank could be killed: " << read_text(err);
  ASSERT_TRUE(fs::exists(json)) << "the first group's rows did not come in 300 s";
  const pid_t rank1 = rank_process(1, sweep);
  ASSERT_GT(rank1, 0);
  ASSERT_EQ(kill(rank1, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  while (!fs::exists(done) && std::chrono::steady_clock::now() - killed < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(done)) << "the job went on 60 s after a rank died";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count(), 30);
  EXPECT_NE(read_text(done), "0\n");
  const std::string said = read_text(err);
  EXPECT_NE(said.find("rank 1"), std::string::npos) << said;
  const nlohmann::json rows = nlohmann::json::parse(read_text(json));
  ASSERT_EQ(rows.size(), 2u);
  for (const nlohmann::json& row : rows) {
    EXPECT_EQ(row["model"], "first");
    EXPECT_EQ(row["partial"], true);
  }
}

// Ranks that run other programs (mpirun's MPMD form: another sweep file on rank 1, whose second
// model is another size): the first group runs, and at the second's first all-reduce every rank
// stops with one error, said once by rank 0, exit 2; the first group's rows stay on disk. (The
// bytes are the reduce-scatter's chunk: half the operand on 2 devices.)
TEST_F(CliTest, RanksThatDisagreeStopTogetherAndTheFinishedRowsStay) {
  const std::string head = "models:\n  - name: first\n    gpt: {layers: 1, batch: 2, sequence: 8, model: 16, heads: 2, "
                           "vocab: 32, parallel: {data: 2}}\n  - name: second\n    gpt: {layers: 1, batch: 2, model: 16, "
                           "heads: 2, vocab: 32, parallel: {tensor: 2}, sequence: ";
  const std::string tail = "}\npolicies: [nothing_saveable]\nbackends: [reference]\nrepetitions: 2\n";
  const std::string mine = write("a.yaml", head + "8" + tail), other = write("b.yaml", head + "4" + tail);
  const std::string json = (dir_ / "rows.json").string();
  const std::string launch = std::string("env ASAN_OPTIONS=detect_leaks=0 ") + REMATKIT_MPIEXEC +
                             " --allow-run-as-root --oversubscribe -n 1 " + REMATKIT_CLI + " sweep " + mine + " --json " +
                             json + " --rank-timeout 20 : -n 1 " + REMATKIT_CLI + " sweep " + other + " --rank-timeout 20";
  const auto started = std::chrono::steady_clock::now();
  const CliRun stopped = run_command(launch);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 30);
  EXPECT_EQ(stopped.exit_code, 2) << stopped.err;
  const std::string& said = stopped.err;
  EXPECT_EQ(count_of(said, "rematkit: "), 1u) << said;
  EXPECT_NE(said.find("rematkit: the ranks disagree at a collective: rank 0 runs psum[axes=('tensor',) "
                      "axis_index_groups=None] of f32[2,8,16] (512 bytes) where rank 1 runs psum[axes=('tensor',) "
                      "axis_index_groups=None] of f32[2,4,16] (256 bytes)"),
            std::string::npos)
      << said;
  const nlohmann::json rows = nlohmann::json::parse(read_text(json));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["model"], "first");
  EXPECT_EQ(rows[0]["partial"], true);
}

#endif  // REMATKIT_MPIEXEC

}  // namespace
}  // namespace rematkit::testing
