// The rematkit program as a user runs it: results on stdout, and for bad input one line on
// stderr that names the problem and place, with exit code 2.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "cli/cli_fixture.hpp"
#include "support/sharded_steps.hpp"
#include "support/test_support.hpp"

namespace rematkit::testing {
namespace {

namespace fs = std::filesystem;

const char* kSquareSum = "{ lambda ; x:f32[3] w:f32[2,3]. let\n"
                         "    a:f32[3] = mul x x\n"
                         "    b:f32[2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] w a\n"
                         "    c:f32[] = reduce_sum[axes=(0,)] b\n"
                         "  in (c,) }\n";

TEST_F(CliTest, ResidualsOfTheBuiltInExampleMatchTheExampleFile) {
  const CliRun builtin = run("residuals");
  const CliRun file = run(std::string("residuals ") + REMATKIT_EXAMPLES_DIR + "/two_layer.jaxpr");
  EXPECT_EQ(builtin.exit_code, 0) << builtin.err;
  EXPECT_EQ(file.exit_code, 0) << file.err;
  // Same residuals, only the file name in " from FILE:LINE" differs. W1, W2, x, the saved dot, the
  // sin passed out of the checkpoint, and the top-level cos.
  EXPECT_EQ(std::count(builtin.out.begin(), builtin.out.end(), '\n'), 6);
  EXPECT_NE(builtin.out.find("f32[5] output of dot_general from <builtin example>:6"), std::string::npos) << builtin.out;
  EXPECT_NE(file.out.find("f32[5] output of dot_general from " + std::string(REMATKIT_EXAMPLES_DIR) + "/two_layer.jaxpr:6"),
            std::string::npos);
}

TEST_F(CliTest, ExplainAddsBytesReaderAndReason) {
  const CliRun r = run("residuals --explain --policy nothing_saveable " + write("p.jaxpr", kSquareSum));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Under nothing_saveable only the inputs are kept: x (12 bytes) and w (24 bytes).
  EXPECT_NE(r.out.find("f32[3] from the argument x\n    12 bytes in device memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a checkpoint's inputs are saved by its caller"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total: 2 residual(s), 36 bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recomputed in the backward pass: 1 equation(s): mul at"), std::string::npos) << r.out;
}

TEST_F(CliTest, GradPrintsValueAndGradients) {
  const std::string program = write("p.jaxpr", kSquareSum);
  const std::string inputs = write("in.json", R"({"x": [1, 2, 3], "w": [[1, 0, 2], [0.5, 1, 1]]})");
  for (const char* policy : {"", " --policy nothing_saveable", " --policy dots_saveable"}) {
    const CliRun r = run("grad " + program + " --inputs " + inputs + policy);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    // c = sum_i (w0_i + w1_i) x_i^2;  dc/dx_i = 2 x_i (w0_i + w1_i);  dc/dw_ji = x_i^2.
    EXPECT_DOUBLE_EQ(j["value"].get<double>(), 1.5 * 1 + 1 * 4 + 3 * 9);
    EXPECT_EQ(j["grads"]["x"], nlohmann::json::parse("[3, 4, 18]"));
    EXPECT_EQ(j["grads"]["w"], nlohmann::json::parse("[[1, 4, 9], [1, 4, 9]]"));
  }
}

TEST_F(CliTest, GradTakesKeysAsTheirWordsAndDropoutIsTheSameUnderEveryPolicy) {
  // jax.random.bernoulli(key(0), 0.9, (3,)): uniform bits of key(0) with partitionable counters are
  // 0.9477, 0.9786, 0.3323 (hashed by hand from the KAT-checked threefry), so only element 2 is kept,
  // scaled by 1 / 0.9.
  const std::string program = write("dropout.jaxpr", R"({ lambda ; k:key<fry>[] x:f32[3]. let
    b:u32[3] = random_bits[bit_width=32 shape=(3,)] k
    s:u32[3] = shift_right_logical b 9:u32[]
    o:u32[3] = or s 1065353216:u32[]
    f:f32[3] = bitcast_convert_type[new_dtype=float32] o
    u:f32[3] = sub f 1.0:f32[]
    m:bool[3] = lt u 0.8999999761581421:f32[]
    d:f32[3] = div x 0.9:f32[]
    z:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 0.0:f32[]
    r:f32[3] = select_n m z d
    l:f32[] = reduce_sum[axes=(0,)] r
  in (l,) })");
  const std::string inputs = write("key.json", R"({"k": [0, 0], "x": [1, 2, 3]})");
  for (const char* policy : {" --policy everything_saveable", " --policy nothing_saveable"}) {
    const CliRun r = run("grad " + program + " --inputs " + inputs + policy);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_FLOAT_EQ(j["value"].get<float>(), 3.0f / 0.9f);
    EXPECT_EQ(j["grads"]["x"][0], 0);
    EXPECT_EQ(j["grads"]["x"][1], 0);
    EXPECT_FLOAT_EQ(j["grads"]["x"][2].get<float>(), 1.0f / 0.9f);
    EXPECT_FALSE(j["grads"].contains("k"));
  }
  const CliRun kept = run("residuals --policy nothing_saveable " + program);
  EXPECT_EQ(kept.out, "key<fry>[] from the argument k\n");
  const CliRun bad = run("grad " + program + " --inputs " + write("bad.json", R"({"k": [0, -1], "x": [1, 2, 3]})"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("input 'k' word 1 is not a u32 value"), std::string::npos) << bad.err;
}

TEST_F(CliTest, GradPlanShowsBackendsAndTheMemoryPlan) {
  // y = sin x on f32[16] (64 bytes a buffer). Steps: sin and its coefficient cos x, the forward
  // readout of y, the backward mul of the seed by cos x, the gradient readout. At the forward's
  // second step x, y and cos x are alive; at the backward step cos x, the seed and x's cotangent:
  // three buffers at most, and greedy placement needs no more.
  const std::string program = write("p.jaxpr", "{ lambda ; x:f32[16]. let y:f32[16] = sin x in (y,) }");
  std::string values = "[";
  for (int i = 0; i < 16; ++i) values += (i ? ", " : "") + std::to_string(0.1 * i);
  const std::string inputs = write("in.json", R"({"x": )" + values + "]}");
  const CliRun r = run("grad " + program + " --inputs " + inputs + " --backend highway,reference --plan --no-fusion");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("forward sin (forward) at "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("on highway"), std::string::npos) << r.out;
  // The memory summary comes first: the peak is the forward's cos step (steps: load x, sin, cos),
  // where x (a parameter), y (a forward value) and cos x (kept for the backward pass) are alive.
  EXPECT_EQ(r.out.rfind("memory device: predicted peak 192 bytes, measured 192, most bytes live at once 192\n"
                        "memory peak: step 2 (forward), cos (sin's JVP) at " + program +
                            ":1:39; parameter 64; saved residual 64; forward temporary 64\n",
                        0),
            0u)
      << r.out;
  // sin and cos forward, the backward mul: 16 each.
  EXPECT_NE(r.out.find("\nflops: forward 32, recomputed 0, backward 16\n"), std::string::npos) << r.out;
  expect_bad_input("grad " + program + " --inputs " + inputs + " --threads -1", "--threads: Value -1 not in range");
  const CliRun one_thread = run("grad " + program + " --inputs " + inputs + " --backend highway,reference --threads 1");
  EXPECT_EQ(one_thread.exit_code, 0) << one_thread.err;
  // The JSON line is the plan's last line, and the whole output without --plan.
  const size_t last_line = r.out.rfind('\n', r.out.size() - 2) + 1;
  EXPECT_EQ(one_thread.out, r.out.substr(last_line));
  EXPECT_EQ(one_thread.out.rfind("{\"value\": ", 0), 0u) << one_thread.out;
}

// Well-formed XML as far as rematkit's SVG goes: every tag closed in order, attributes quoted, and
// '&' only in the five named entities. Python's parser checks the same file too where there is one.
bool well_formed_xml(const std::string& xml) {
  std::vector<std::string> open;
  for (size_t i = 0; i < xml.size(); ++i) {
    if (xml[i] == '&') {
      const size_t end = xml.find(';', i);
      const std::string entity = end == std::string::npos ? "" : xml.substr(i, end - i + 1);
      if (entity != "&lt;" && entity != "&gt;" && entity != "&amp;" && entity != "&quot;" && entity != "&apos;") return false;
    }
    if (xml[i] != '<') continue;
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return false;
    const std::string tag = xml.substr(i + 1, end - i - 1);
    i = end;
    if (tag.empty() || tag.find('<') != std::string::npos) return false;
    if (tag[0] == '?') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2) return false;
    const std::string name = tag.substr(tag[0] == '/' ? 1 : 0, tag.find_first_of(" /\n", 1) - (tag[0] == '/' ? 1 : 0));
    if (tag[0] == '/') {
      if (open.empty() || open.back() != name) return false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(name);
    }
  }
  return open.empty();
}

TEST_F(CliTest, MemoryExplainsThePeakPerPolicyAndDrawsTheTimeline) {
  // y = sin(x) * w on f32[256] (1024 bytes a buffer): tests/analysis/memory_report_test.cpp works
  // out both peaks, 5 buffers each: step 7 of 11 steps with sin and cos saved, step 7 of 12 with
  // them recomputed where each is read (sin alone is alive at the peak).
  const std::string program = write("p.jaxpr", "{ lambda ; x:f32[256] w:f32[256]. let\n"
                                               "    a:f32[256] = sin x\n"
                                               "    y:f32[256] = mul a w\n"
                                               "  in (y,) }\n");
  const std::string svg = (dir_ / "t.svg").string();
  const CliRun r = run("memory " + program + " --policy everything_saveable --policy nothing_saveable --no-fusion --timeline " + svg);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("policy everything_saveable\npeak: step 7 (of 0..10), in the backward pass: mul (transposed "
                        "mul) at " + program + ":3:18\ndevice memory alive there: 5.0 KiB (5120 bytes) in 5 buffer(s)\n",
                        0),
            0u)
      << r.out;
  EXPECT_NE(r.out.find("\n\npolicy nothing_saveable\npeak: step 7 (of 0..11), in the backward pass: "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  recomputed  1.0 KiB  1024  20%\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gradient of argument w\n"), std::string::npos) << r.out;

  const std::string timeline = read_text(svg);
  EXPECT_TRUE(well_formed_xml(timeline)) << timeline;
  EXPECT_FALSE(well_formed_xml("<svg><g></svg></g>"));
  EXPECT_FALSE(well_formed_xml("<svg><text>a & b</text></svg>"));
  if (std::system("python3 -c 'import xml.dom.minidom' >/dev/null 2>&1") == 0) {
    EXPECT_EQ(std::system(("python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' " + svg).c_str()), 0);
  }
  // One panel per policy on one scale: 5120 bytes is 0.00488 MiB; with room for the label, 0.00527
  // in about five ticks is 0.002 apart (1/2/5 x 10^k), up to 0.006.
  EXPECT_NE(timeline.find(">everything_saveable</text>"), std::string::npos);
  EXPECT_NE(timeline.find(">nothing_saveable</text>"), std::string::npos);
  for (const char* tick : {">0</text>", ">0.002</text>", ">0.004</text>", ">0.006</text>"})
    EXPECT_NE(timeline.find(std::string("text-anchor=\"end\"") + tick), std::string::npos) << tick;
  EXPECT_EQ(timeline.find(">0.008</text>"), std::string::npos);
  const std::string peak_label = ">peak 5.0 KiB, step 7 (backward)</text>";  // once per panel
  const size_t first_label = timeline.find(peak_label);
  ASSERT_NE(first_label, std::string::npos);
  EXPECT_NE(timeline.find(peak_label, first_label + 1), std::string::npos);
  for (const char* legend : {">saved residual</text>", ">recomputed</text>", ">recompute pass</text>"})
    EXPECT_NE(timeline.find(legend), std::string::npos) << legend;

  const CliRun json = run("memory " + program + " --policy everything_saveable --policy nothing_saveable --no-fusion --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["policy"], "everything_saveable");
  EXPECT_EQ(j[0]["peak_step"], 7);
  EXPECT_EQ(j[0]["peak_pass"], "backward");
  EXPECT_EQ(j[0]["peak_bytes"]["saved_residual"], 2048);
  EXPECT_EQ(j[1]["peak_bytes"]["recomputed"], 1024);
  EXPECT_EQ(j[1]["peak_step"], 7);
  EXPECT_EQ(j[1]["steps"].size(), 12u);
  EXPECT_EQ(j[1]["live_peak"]["device"], 5120);

  const std::string not_written = (dir_ / "no.svg").string();
  expect_bad_input("memory " + program + " --policy no_such_policy --timeline " + not_written,
                   "--policy: unknown policy 'no_such_policy'");
  EXPECT_FALSE(fs::exists(not_written));
  expect_bad_input("memory " + (dir_ / "missing.jaxpr").string(), "missing.jaxpr: cannot open the program file");
  expect_bad_input("memory " + program + " --timeline " + (dir_ / "no-such-dir" / "t.svg").string(),
                   "t.svg: cannot write the timeline");
  expect_bad_input("memory " + write("bad.jaxpr", "{ lambda ; x:f32[3]. let y:f32[3] = nosuch x in (y,) }"),
                   "bad.jaxpr:1:");
}

// sin, then mul with a weight v, a dot with W, sin again.
const char* kSinMulDot = "{ lambda ; x:f32[4] W:f32[4,4] v:f32[4]. let\n"
                         "    a:f32[4] = sin x\n"
                         "    b:f32[4] = mul a v\n"
                         "    d:f32[4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] W b\n"
                         "    e:f32[4] = sin d\n"
                         "    l:f32[] = reduce_sum[axes=(0,)] e\n"
                         "  in (l,) }\n";

TEST_F(CliTest, CompareListsWhatEachPolicyKeeps) {
  // Worked out from JAX's rules, each --policy checkpointing the whole program. The backward pass
  // needs cos x (sin's JVP), a and v (mul's), W and b (the dot's) and cos d (the second sin's).
  // everything_saveable keeps those: W, v, sin, cos, mul, cos; not x (cos x is kept) nor d (cos d is).
  // nothing_saveable keeps the checkpoint's inputs the recomputation needs, x, W and v, and
  // recomputes sin, cos, mul, dot_general and cos d. dots_saveable keeps the dot's output d too and
  // recomputes the rest from x, v and d. offload_dot_with_no_batch_dims is dots_saveable with d in
  // pinned host memory. f32[4] is 16 bytes, f32[4,4] 64.
  const std::string program = write("p.jaxpr", kSinMulDot);
  const std::string policies = " --policy everything_saveable --policy nothing_saveable --policy dots_saveable"
                               " --policy \"offload_dot_with_no_batch_dims('device', 'pinned_host')\"";
  const CliRun r = run("compare " + program + policies + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"f32[4] from the argument x", {"-", "kept 16", "kept 16", "kept 16"}},
      {"f32[4,4] from the argument W", {"kept 64", "kept 64", "kept 64", "kept 64"}},
      {"f32[4] from the argument v", {"kept 16", "kept 16", "kept 16", "kept 16"}},
      {"f32[4] output of sin, line 2", {"kept 16", "recomputed", "recomputed", "recomputed"}},
      {"f32[4] output of cos, line 2", {"kept 16", "recomputed", "recomputed", "recomputed"}},
      {"f32[4] output of mul, line 3", {"kept 16", "recomputed", "recomputed", "recomputed"}},
      {"f32[4] output of dot_general, line 4", {"-", "recomputed", "kept 16", "offloaded 16"}},
      {"f32[4] output of cos, line 5", {"kept 16", "recomputed", "recomputed", "recomputed"}},
  };
  ASSERT_EQ(j["values"].size(), expected.size()) << r.out;
  for (size_t i = 0; i < expected.size(); ++i) {
    const nlohmann::json& row = j["values"][i];
    EXPECT_EQ(row["value"], expected[i].first);
    std::vector<std::string> cells;
    for (const nlohmann::json& cell : row["policies"])
      cells.push_back(cell["as"].get<std::string>() + (cell.contains("bytes") ? " " + cell["bytes"].dump() : ""));
    for (std::string& cell : cells)
      if (cell == "not_read") cell = "-";
    EXPECT_EQ(cells, expected[i].second) << expected[i].first;
  }
  // Residual bytes: 64 + 5 x 16; 16 + 64 + 16; and the dot's 16 more. Recompute FLOPs, one per element
  // and 2 x 4 x 4 for the dot: sin, cos, mul, dot, cos = 4 + 4 + 4 + 32 + 4; without the dot 16.
  const std::vector<int64_t> bytes = {144, 96, 112, 112}, recompute = {0, 48, 16, 16};
  for (size_t p = 0; p < 4; ++p) {
    EXPECT_EQ(j["policies"][p]["residual_bytes"], bytes[p]) << p;
    EXPECT_EQ(j["policies"][p]["flops"]["recompute"], recompute[p]) << p;
  }
  // The offloaded d is the only pinned host buffer: 16 bytes in a slot of kBufferAlignment (64).
  EXPECT_EQ(j["policies"][3]["predicted_peak"]["pinned_host"], 64);
  for (size_t p = 0; p < 3; ++p) EXPECT_EQ(j["policies"][p]["predicted_peak"]["pinned_host"], 0) << p;
  EXPECT_EQ(j["gradients"]["identical"], true);
  EXPECT_EQ(j["gradients"]["arguments"], 3);

  // The table: the same rows, every line within 120 columns.
  const CliRun table = run("compare " + program + policies);
  ASSERT_EQ(table.exit_code, 0) << table.err;
  std::istringstream lines(table.out);
  size_t rows = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 120u) << line;
    std::istringstream words(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(words), {}};
    if (line.rfind("f32[4] output of dot_general, line 4", 0) == 0) {
      EXPECT_EQ(std::vector<std::string>(w.end() - 8, w.end()),
                (std::vector<std::string>{"-", "recomputed", "kept", "16", "B", "offloaded", "16", "B"}))
          << line;
      ++rows;
    }
    if (line.rfind("f32[4] from the argument x", 0) == 0) {
      EXPECT_EQ(std::vector<std::string>(w.end() - 10, w.end()),
                (std::vector<std::string>{"-", "kept", "16", "B", "kept", "16", "B", "kept", "16", "B"}))
          << line;
      ++rows;
    }
  }
  EXPECT_EQ(rows, 2u) << table.out;
  EXPECT_NE(table.out.find("\ngradients: the same bytes under every policy (3 argument(s)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("\nwall time, measured once after a warm-up: all at once "), std::string::npos) << table.out;
}

TEST_F(CliTest, CompareTakesInputsAndWrtAndRejectsBadInput) {
  // Only W's gradient: b is recomputed from x and v under nothing_saveable, and cos d needs d = W b,
  // so W is kept; dots_saveable keeps d and needs W no more.
  const std::string program = write("p.jaxpr", kSinMulDot);
  const std::string inputs =
      write("in.json", R"({"x": [1, 2, 3, 4], "v": [0.5, -1, 2, 0], "W": [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1]]})");
  const CliRun r = run("compare " + program + " --policy dots_saveable --policy nothing_saveable --wrt W --inputs " +
                       inputs + " --backend highway,reference --threads 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["values"][1]["value"], "f32[4,4] from the argument W");
  EXPECT_EQ(j["values"][1]["policies"][0]["as"], "not_read");
  EXPECT_EQ(j["values"][1]["policies"][1]["as"], "kept");
  EXPECT_EQ(j["gradients"]["arguments"], 1);
  EXPECT_EQ(j["gradients"]["identical"], true);
  EXPECT_EQ(j["wall_ms"]["one_after_another_threads"], 2);

  expect_bad_input("compare " + program + " --policy everything_saveable --policy no_such",
                   "--policy: unknown policy 'no_such'");
  expect_bad_input("compare " + program, "--policy is required");
  expect_bad_input("compare " + program + " --policy dots_saveable --inputs " + write("bad.json", R"({"x": [1, 2, 3, 4]})"),
                   "bad.json: missing input 'W'");
  expect_bad_input("compare " + program + " --policy dots_saveable --wrt y", "--wrt: 'y' is not an argument");
  expect_bad_input("compare " + program + " --policy dots_saveable --backend nope", "unknown backend 'nope'");
}

TEST_F(CliTest, SweepWritesItsTableAndOnlyTheOutputsItNames) {
  const std::string sweep = write("s.yaml", R"yaml(models:
  - name: tiny
    mlp: {input: 3, widths: [4, 2], batch: 2}
policies: [nothing_saveable, dots_saveable]
backends: [reference]
repetitions: 1
outputs: {csv: out/r.csv, json: r.json, charts: figs, report: html}
)yaml");
  fs::create_directory(dir_ / "out");
  const CliRun r = run("sweep " + sweep);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The compact table: the one group's title, a line per policy, and what the group shows.
  EXPECT_EQ(r.out.rfind("tiny on reference, 1 thread\n", 0), 0u) << r.out;
  for (const char* policy : {" nothing_saveable  ", " dots_saveable  ", "\n  fastest: "})
    EXPECT_NE(r.out.find(policy), std::string::npos) << policy << " in\n" << r.out;
  EXPECT_NE(r.err.find("rematkit sweep: [0/2 rows done] tiny on reference, 1 thread(s)"), std::string::npos) << r.err;
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) files.push_back(fs::relative(entry.path(), dir_).string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"figs", "figs/tiny.svg", "html", "html/index.html", "out", "out/r.csv", "r.json",
                                              "s.yaml", "stderr", "stdout"}));
  const std::string page = read_text((dir_ / "html" / "index.html").string());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("<svg"), std::string::npos);  // the chart inline
  EXPECT_EQ(nlohmann::json::parse(read_text((dir_ / "r.json").string()))[0]["partial"], false);
  // --wide: the full table, a header and a line per configuration.
  const CliRun wide = run("sweep " + sweep + " --wide --csv " + (dir_ / "out" / "w.csv").string());
  EXPECT_EQ(wide.out.rfind("config  model  ", 0), 0u) << wide.out;
  EXPECT_EQ(std::count(wide.out.begin(), wide.out.end(), '\n'), 3) << wide.out;

  expect_bad_input("sweep " + write("bad.yaml", "models:\n  - mlp: {input: 3, widths: [2], depht: 2}\n"),
                   "bad.yaml:2:34: unknown key 'depht' in an mlp model");
  expect_bad_input("sweep " + (dir_ / "missing.yaml").string(), "missing.yaml: cannot open the sweep file");
}

TEST_F(CliTest, ShardsOfASweepMergeIntoTheWholeSweep) {
  const std::string sweep = write("s.yaml", R"yaml(models:
  - name: a
    mlp: {input: 3, widths: [4, 2], batch: 2}
  - name: b
    mlp: {input: 2, widths: [3], batch: 1, remat: whole}
policies: [nothing_saveable, dots_saveable, everything_saveable]
backends: [reference]
repetitions: 1
)yaml");
  const std::string whole = (dir_ / "whole.json").string();
  ASSERT_EQ(run("sweep " + sweep + " --json " + whole).exit_code, 0);
  std::vector<std::string> parts;
  for (int i = 1; i <= 4; ++i) {
    parts.push_back((dir_ / ("part" + std::to_string(i) + ".json")).string());
    const CliRun r = run("sweep " + sweep + " --shard " + std::to_string(i) + "/4 --json " + parts.back());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // 6 configurations over 4 shards: 2, 2, 1, 1.
  EXPECT_EQ(nlohmann::json::parse(read_text(parts[0])).size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(read_text(parts[3])).size(), 1u);
  const std::string merged = (dir_ / "merged.json").string();
  const CliRun m = run("sweep-merge " + parts[2] + " " + parts[0] + " " + parts[3] + " " + parts[1] + " --json " + merged);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  // The table shows the merged rows: both models' groups.
  for (const char* title : {"a on reference, 1 thread\n", "\nb on reference, 1 thread\n"})
    EXPECT_NE(m.out.find(title), std::string::npos) << title << " in\n" << m.out;
  // Everything but the timings and what follows from them matches the unsharded sweep, row for row.
  nlohmann::json a = nlohmann::json::parse(read_text(whole)), b = nlohmann::json::parse(read_text(merged));
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(without_timings(a), without_timings(b));

  expect_bad_input("sweep-merge " + parts[0] + " " + parts[1] + " " + parts[3], "1 of 6 configurations is missing: 3");
  expect_bad_input("sweep-merge " + parts[0] + " " + parts[0], "configuration 1 is in both");
  expect_bad_input("sweep " + sweep + " --shard 5/4", "--shard: '5/4' needs 1 <= I <= N");
  expect_bad_input("sweep " + sweep + " --shard two", "--shard: 'two' is not I/N");
  expect_bad_input("sweep-merge " + sweep, "s.yaml: not a sweep's JSON output");
}

// compare runs each policy's step a device at a time on the simulated mesh, and its answers are
// one device's: the FSDP step keeps a [2,4] block of x (32 B), not the whole [8,4].
TEST_F(CliTest, CompareOfAShardedStepRunsEachPolicyPerDevice) {
  const std::string step = write("fsdp.jaxpr", with_policy(kFsdpStep, "nothing_saveable"));
  const CliRun r = run("compare " + step + " --policy nothing_saveable --policy everything_saveable");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("gradients: the same bytes under every policy (3 argument(s)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("f32[2,4]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("f32[8,4]"), std::string::npos) << r.out;
}

TEST_F(CliTest, ANamedPluginThatDoesNotLoadIsBadInputForPluginsToo) {
  // The listing still comes (it is how one finds out what is wrong), then one line and exit 2.
  const CliRun r = run("plugins --plugin /etc/passwd");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.out.find("problem: /etc/passwd: not a loadable plugin library"), std::string::npos) << r.out;
  EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("rematkit: --plugin: /etc/passwd: not a loadable plugin library", 0), 0u) << r.err;
}

TEST_F(CliTest, NumbersPastTheirRangeAreBadInputAtTheirPlace) {
  // Found by mutating programs: std::stod and std::stoll threw out_of_range, an internal error.
  expect_bad_input("residuals " + write("f.jaxpr", "{ lambda ; x:f32[3]. let\n    y:f32[3] = add x 1e309\n  in (y,) }\n"),
                   "f.jaxpr:2:22: the number 1e309 is too large for a float64");
  expect_bad_input("residuals " + write("i.jaxpr", "{ lambda ; x:f32[3]. let\n    y:f32[3] = reduce_precision[exponent_bits="
                                                   "99999999999999999999 mantissa_bits=2] x\n  in (y,) }\n"),
                   "i.jaxpr:2:47: the integer 99999999999999999999 does not fit in 64 bits");
  expect_bad_input("residuals " + write("d.jaxpr", "{ lambda ; x:f32[99999999999999999999]. let\n  in (x,) }\n"),
                   "d.jaxpr:1:18: the integer 99999999999999999999 does not fit in 64 bits");
  // Below a double's range is not an error: it rounds to zero, as Python's float('1e-400') does.
  const CliRun tiny = run("residuals " + write("t.jaxpr", "{ lambda ; x:f32[3]. let\n    y:f32[3] = mul x 1e-400\n  in (y,) }\n"));
  EXPECT_EQ(tiny.exit_code, 0) << tiny.err;
}

TEST_F(CliTest, SweepMistakesFailBeforeAnythingRunsAtTheirLine) {
  const std::string head = "models:\n  - name: tiny\n    mlp: {input: 3, widths: [2], batch: 1}\noutputs: {csv: r.csv}\n";
  expect_bad_input("sweep " + write("p.yaml", head + "policies: [everything_saveable, nothing_savable]\nbackends: [reference]\n"),
                   "p.yaml:5:33: unknown policy 'nothing_savable' (did you mean 'nothing_saveable'?)");
  expect_bad_input("sweep " + write("b.yaml", head + "policies: [dots_saveable]\nbackends: [reference, refrence]\n"),
                   "b.yaml:6:23: unknown backend 'refrence' (did you mean 'reference'?)");
  expect_bad_input("sweep " + write("d.yaml", head + "policies: [dots_saveable]\nbackends: [reference]\nbackends: [highway]\n"),
                   "d.yaml:7:1: 'backends' is given twice in the sweep (first at ");
  expect_bad_input("sweep " + write("l.yaml", head + "policies: [dots_saveable]\nbackends: [reference]\nplugins: [/etc/passwd]\n"),
                   "l.yaml:7:11: /etc/passwd");
  const std::string good = write("g.yaml", head + "policies: [dots_saveable]\nbackends: [reference]\n");
  expect_bad_input("sweep " + good + " --csv /nonexistent/dir/x.csv",
                   "--csv: /nonexistent/dir/x.csv: cannot write the sweep output: /nonexistent/dir does not exist");
  expect_bad_input("sweep " + good + " --shard 1/0", "--shard: '1/0' needs 1 <= I <= N");
  EXPECT_FALSE(fs::exists(dir_ / "r.csv"));  // nothing ran, nothing was written
}

TEST_F(CliTest, CtrlCKeepsTheGroupsThatFinishedAndExits130) {
  // Two groups (reference, then highway), each timed for about two seconds; SIGINT once the first
  // is done. The CSV keeps the first group's three rows, and the exit code is 128 + SIGINT.
  const std::string sweep = write("s.yaml", R"yaml(models:
  - name: tiny
    mlp: {input: 3, widths: [4, 2], batch: 2}
policies: [nothing_saveable, everything_saveable, dots_saveable]
backends: [reference, "highway,reference"]
repetitions: auto
target_interval: 0.0001%
time_limit: 2s
outputs: {csv: r.csv}
)yaml");
  const std::string err = (dir_ / "stderr").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = "exec " + std::string(REMATKIT_CLI) + " sweep " + sweep + " >/dev/null 2>" + err;
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  bool second_group = false;
  for (int i = 0; i < 600 && !second_group; ++i) {  // at most a minute
    usleep(100000);
    second_group = read_text(err).find("[3/6 rows done]") != std::string::npos;
  }
  ASSERT_TRUE(second_group) << read_text(err);
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << read_text(err);
  EXPECT_NE(read_text(err).find("interrupted: kept the 3 rows"), std::string::npos) << read_text(err);
  const std::string csv = read_text((dir_ / "r.csv").string());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;  // the header and three rows
  EXPECT_EQ(csv.find("highway"), std::string::npos) << csv;
}

TEST_F(CliTest, ProgramsComeFromStandardInputWhenPipedOrNamedDash) {
  const std::string program = write("p.jaxpr", "{ lambda ; x:f32[3]. let\n y:f32[3] = sin x in (y,) }");
  const std::vector<std::string> expected_out = {"f32[3] output of cos from <stdin>:2\n"};
  EXPECT_EQ(run("residuals", program).out, expected_out[0]);    // piped, no FILE
  EXPECT_EQ(run("residuals -", program).out, expected_out[0]);  // '-'
  // Nothing piped in (an empty standard input): the built-in example, as from a terminal.
  const CliRun builtin = run("residuals");
  EXPECT_EQ(builtin.out.rfind("f32[5,4] from the argument W1\n", 0), 0u) << builtin.out;
  EXPECT_NE(builtin.out.find("output of sin from <builtin example>:7\n"), std::string::npos) << builtin.out;
  const CliRun bad = run("residuals -", write("bad.jaxpr", "{ lambda ; x:f32[]. let y:f32[] = cosh x in (y,) }"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "rematkit: <stdin>:1:35: unknown primitive 'cosh'\n");
}

TEST_F(CliTest, CheckListsEveryProblemAtOnce) {
  // Line 2: an unknown primitive (its output stays f32[4,8]); line 3: f8_e5m2 (f32 stands in); line 4:
  // f8_e5m2 again and a second unknown primitive; line 5: a shape error in an equation that reads the
  // outputs of the skipped ones.
  const std::string program = write("many.jaxpr", R"({ lambda ; a:i32[4] b:f32[4,8]. let
    d:f32[4,8] = lgamma b
    e:f8_e5m2[4,8] = convert_element_type[new_dtype=float32] d
    f:f8_e5m2[4,8] = cosh e
    g:f32[4,9] = sin d
  in (g, f) })");
  const CliRun r = run("check " + program);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, program + ":2:18: unknown primitive 'lgamma'\n" +
                       program + ":3:7: unsupported dtype 'f8_e5m2' (rematkit supports f32, bf16, f16, f64, c64, c128, i8, i32, i64, u8, u32, bool and key<fry>) (also on line 4)\n" +
                       program + ":4:22: unknown primitive 'cosh'\n" +
                       program + ":5:18: sin of f32[4,8] computes f32[4,8] but 'g' is declared f32[4,9]\n");
  const CliRun ok = run("check " + write("ok.jaxpr", kSquareSum));
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("ok.jaxpr: ok: "), std::string::npos) << ok.out;
  // What reading cannot find, differentiating does: a checkpoint with an unknown policy.
  const CliRun policy = run("check " + write("policy.jaxpr", "{ lambda ; x:f32[]. let y:f32[] = checkpoint["
                                                            "policy=no_such_policy jaxpr={ lambda ; a:f32[]. let "
                                                            "b:f32[] = sin a in (b,) }] x in (y,) }"));
  EXPECT_EQ(policy.exit_code, 2);
  EXPECT_NE(policy.out.find("unknown policy 'no_such_policy'"), std::string::npos) << policy.out;
}

TEST_F(CliTest, CheckReadsOlderAndNewerJaxForms) {
  // Explicit sharding (JAX 0.4.35 on): read as the whole arrays, and check notes the annotations.
  const CliRun sharded = run("check " + write("sharded.jaxpr", "{ lambda ; a:f32[8@x,4] b:f32[4]{V:i}. let\n"
                                                              "    c:f32[8@x,4] = mul a a\n  in (c,) }"));
  EXPECT_EQ(sharded.exit_code, 0) << sharded.out;
  EXPECT_NE(sharded.out.find("note: 3 value(s) carry JAX sharding annotations (a:f32[8@x,4], ...); each is read and "
                             "computed as the whole, unsharded array\n"),
            std::string::npos)
      << sharded.out;
  EXPECT_EQ(run("check " + write("plain.jaxpr", kSquareSum)).out.find("note:"), std::string::npos);
  // JAX before 0.2.22 printed no types: --arg-types gives the arguments theirs, for every command
  // that reads a program.
  const std::string untyped = write("untyped.jaxpr", "{ lambda  ; a b.\n  let c = sin b\n      d = mul a c\n  in (d,) }");
  const CliRun typed = run("residuals --arg-types a:f32[3],b:f32[3] " + untyped);
  EXPECT_EQ(typed.exit_code, 0) << typed.err;
  // d = a * sin b: a's cotangent needs sin b, b's needs a and cos b.
  EXPECT_EQ(typed.out, "f32[3] from the argument a\nf32[3] output of sin from " + untyped + ":2\nf32[3] output of cos from " +
                           untyped + ":2\n");
  const std::string inputs = write("in.json", R"({"a": [1, 2, 3], "b": [0.1, 0.2, 0.3]})");
  for (const std::string& command : std::vector<std::string>{"check", "memory", "compare --policy nothing_saveable",
                                                             "solve --budget min", "grad --inputs " + inputs})
    EXPECT_EQ(run(command + " --arg-types a:f32[3],b:f32[3] " + untyped).exit_code, 0) << command;
  expect_bad_input("residuals " + untyped, "untyped.jaxpr:1:13: binder 'a' has no type (JAX before 0.2.22 printed none): "
                                           "give it with --arg-types a:f32[3],... or write it as a:f32[...]");
  // check names the JAX versions a refused form comes from: jax_remat3's custom_remat (0.10.2 on).
  const std::string remat3 = write("remat3.jaxpr", "{ lambda ; a:f32[3]. let\n    b:f32[3] = call_hi_primitive[\n"
                                                   "      _prim=CustomRemat[{'jaxpr': None}]\n    ] a\n  in (b,) }");
  const CliRun hi = run("check " + remat3);
  EXPECT_EQ(hi.exit_code, 2);
  EXPECT_EQ(hi.out, remat3 + ":3:13: call_hi_primitive of CustomRemat is not supported: jax.custom_remat (jax_remat3, "
                             "JAX 0.10.2 on) prints its fwd, rem and bwd rules as Python objects, not jaxprs, so the "
                             "program does not carry the rules its gradient uses\n");
  // A function policy under jax_remat3 is never called: check and residuals say so at the checkpoint,
  // and everything in it is recomputed (only the argument is kept; sin's cos a is recomputed).
  const std::string lambda = write("remat3_lambda.jaxpr",
                                   "{ lambda ; a:f32[3]. let\n    b:f32[3] = call_hi_primitive[_prim=RematTraced[{'jaxpr': "
                                   "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n  in (b,) }, 'policy': <function "
                                   "f.<locals>.<lambda> at 0x7f0000000000>, 'prevent_cse': True}]] a\n  in (b,) }");
  const std::string note = lambda + ":2:16: note: jax_remat3 never calls a function policy (<function "
                                    "f.<locals>.<lambda>>): everything in this checkpoint is recomputed, read as "
                                    "nothing_saveable\n";
  const CliRun noted = run("check " + lambda);
  EXPECT_EQ(noted.exit_code, 0) << noted.err;
  EXPECT_EQ(noted.out, lambda + ": ok: 1 top-level equation(s) read, verified and differentiated\n" + note);
  const CliRun kept = run("residuals " + lambda);
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  EXPECT_EQ(kept.out, "f32[3] from the argument a\n");
  EXPECT_EQ(kept.err, note);
  // Dynamic shapes (abstracted axes, JAX 0.2.28-0.8.1) are refused by name.
  expect_bad_input("residuals " + write("dynamic.jaxpr", "{ lambda ; a:i32[] b:f32[a,4]. let  in (b,) }"),
                   "dynamic.jaxpr:1:26: dynamic shapes (JAX's abstracted axes, 0.2.28-0.8.1) are not supported");
  expect_bad_input("grad --inputs " + inputs + " --arg-types a:f32[3],b " + untyped, "--arg-types:1:11: expected ':', found end of file");
}

TEST_F(CliTest, VersionAndDefaultBackends) {
  const CliRun version = run("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, "rematkit " REMATKIT_VERSION "\n");
  // With no --backend, grad runs on the fastest backends installed, as the API does.
  const std::string program = write("p.jaxpr", "{ lambda ; x:f32[16]. let y:f32[16] = sin x in (y,) }");
  std::string values = "[";
  for (int i = 0; i < 16; ++i) values += (i ? ", " : "") + std::to_string(0.1 * i);
  const CliRun r = run("grad " + program + " --inputs " + write("in.json", R"({"x": )" + values + "]}") + " --plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> installed = default_plugins().backend_names();
  const bool has_highway = std::find(installed.begin(), installed.end(), "highway") != installed.end();
  // sin and its JVP coefficient cos read x alone: highway runs them as one kernel; reference fuses nothing.
  EXPECT_NE(r.out.find(has_highway ? "forward fused sin (1:39) + cos (1:39) (forward) at " + program + ":1:39 on highway"
                                   : "forward sin (forward) at " + program + ":1:39 on reference"),
            std::string::npos)
      << r.out;
}

TEST_F(CliTest, WrtAndRetargetPolicyUseAPastedProgramAsItIs) {
  // c = sum_i (w0_i + w1_i) x_i^2: with --wrt w only w gets a gradient, x_i^2 per row.
  const std::string program = write("p.jaxpr", kSquareSum);
  const std::string inputs = write("in.json", R"({"x": [1, 2, 3], "w": [[1, 0, 2], [0.5, 1, 1]]})");
  const CliRun grad = run("grad " + program + " --inputs " + inputs + " --wrt w");
  ASSERT_EQ(grad.exit_code, 0) << grad.err;
  const nlohmann::json j = nlohmann::json::parse(grad.out);
  EXPECT_EQ(j["grads"], nlohmann::json::parse(R"({"w": [[1, 4, 9], [1, 4, 9]]})"));
  expect_bad_input("residuals " + program + " --wrt v", "--wrt: 'v' is not an argument of the program (the arguments: ");
  // A checkpoint with nothing_saveable keeps only its input; retargeted to everything_saveable it
  // keeps sin's cos (its JVP coefficient) where it is computed.
  const std::string checkpointed = write("c.jaxpr", "{ lambda ; x:f32[3]. let y:f32[3] = checkpoint["
                                                    "policy=nothing_saveable jaxpr={ lambda ; a:f32[3]. let\n"
                                                    "b:f32[3] = sin a in (b,) }] x in (y,) }");
  EXPECT_EQ(run("residuals " + checkpointed).out, "f32[3] from the argument x\n");
  EXPECT_EQ(run("residuals " + checkpointed + " --retarget-policy everything_saveable").out,
            "f32[3] output of cos from " + checkpointed + ":2\n");
  expect_bad_input("residuals " + program + " --retarget-policy dots_saveable",
                   "--retarget-policy: the program has no checkpoint whose policy could be replaced");
}

TEST_F(CliTest, HelpDocumentsTheCommands) {
  const CliRun top = run("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("residuals"), std::string::npos);
  EXPECT_NE(top.out.find("grad"), std::string::npos);
  const CliRun sub = run("residuals --help");
  EXPECT_EQ(sub.exit_code, 0);
  EXPECT_NE(sub.out.find("--explain"), std::string::npos);
}

TEST_F(CliTest, BadProgramsAndOptions) {
  expect_bad_input("residuals " + (dir_ / "missing.jaxpr").string(), "missing.jaxpr: cannot open the program file");
  expect_bad_input("residuals " + write("empty.jaxpr", ""), "empty.jaxpr:1:1: empty program");
  expect_bad_input("residuals " + write("bad.jaxpr", "{ lambda ; x:f32[]. let y:f32[] = sin x in (y }"),
                   "bad.jaxpr:1:47: expected ',' or ')'");
  expect_bad_input("residuals " + write("prim.jaxpr", "{ lambda ; x:f32[]. let\n y:f32[] = bessel_i0e x in (y,) }"),
                   "prim.jaxpr:2:12: unknown primitive 'bessel_i0e'");
  expect_bad_input("residuals " + write("undef.jaxpr", "{ lambda ; x:f32[]. let y:f32[] = sin z in (y,) }"),
                   "undef.jaxpr:1:39: undefined variable 'z'");
  expect_bad_input("residuals " + write("shape.jaxpr", "{ lambda ; a:f32[2] b:f32[3]. let c:f32[2] = mul a b in (c,) }"),
                   "shape.jaxpr:1:46: mul operand shapes do not match");
  expect_bad_input("residuals --policy no_such_policy " + write("p.jaxpr", kSquareSum), "unknown policy 'no_such_policy'");
  expect_bad_input("residuals --policy \"save_only_these_names(\" " + write("p.jaxpr", kSquareSum), "--policy:1:23");
  expect_bad_input("residuals --no-such-flag", "--no-such-flag");
  expect_bad_input("frobnicate", "unknown command 'frobnicate'");
}

TEST_F(CliTest, BadInputsFiles) {
  const std::string program = write("p.jaxpr", kSquareSum);
  auto grad = [&](const std::string& json) { return "grad " + program + " --inputs " + write("in.json", json); };
  expect_bad_input(grad(R"({"x": [1, 2, 3]})"), "in.json: missing input 'w' (f32[2,3])");
  expect_bad_input(grad(R"({"x": [1, 2], "w": [[1, 0, 2], [0.5, 1, 1]]})"),
                   "in.json: input 'x' must be a list of 3 (the binder's shape is [3]), got a list of 2");
  expect_bad_input(grad(R"({"x": [1, "NaN", 3], "w": [[1, 0, 2], [0.5, 1, 1]]})"), "in.json: input 'x'[1] must be a number");
  expect_bad_input(grad(R"({"x": [1, 1e39, 3], "w": [[1, 0, 2], [0.5, 1, 1]]})"),
                   "in.json: input 'x' element 1 (1e+39) is not a finite f32 value");
  expect_bad_input(grad(R"({"x": [1, 2, 3], "w": [[1, 0, 2], [0.5, 1, 1]], "y": 1})"),
                   "in.json: 'y' is not an argument or constant of the program");
  expect_bad_input(grad("[1, 2"), "in.json: not valid JSON");
  // fuzz/regressions/inputs/number_overflow.json: nlohmann-json's out_of_range, an internal error before.
  expect_bad_input(grad(R"({"x": [1, 2e42089343070984, 3], "w": [[1, 0, 2], [0.5, 1, 1]]})"),
                   "in.json: not valid JSON: number overflow parsing '2e42089343070984'");
  expect_bad_input(grad(""), "in.json: the inputs file is empty");
  expect_bad_input("grad " + program, "--inputs is required");
}

TEST_F(CliTest, MlpPrintsFlaxsOutput) {
  // reference/flax-init.md section 8: --seed 0 --features 4 --x 1,2,3 gives
  // [-0.66245556, 0.44945496, 0.044840213, -0.7217065] (tolerance as in golden/flax_mlp.json).
  const std::vector<double> expected = {-0.66245556, 0.44945496, 0.044840213, -0.7217065};
  for (const std::string& x : {std::string("--x 1,2,3"), "--x-file " + write("x.json", "[1, 2.0, 3]")}) {
    const CliRun r = run("mlp --seed 0 --features 4.0 " + x);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<double> out = nlohmann::json::parse(r.out).get<std::vector<double>>();
    ASSERT_EQ(out.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(out[i], expected[i], 2e-5 * std::fabs(expected[i]) + 1e-6 * 0.73);
  }
  const CliRun with_params = run("mlp --seed 0 --features 4 --x 1,2,3 --params");
  ASSERT_EQ(with_params.exit_code, 0) << with_params.err;
  const std::string params_line = with_params.out.substr(with_params.out.find('\n') + 1);
  const nlohmann::json params = nlohmann::json::parse(params_line);
  // The golden Dense_0 kernel's first entry, exactly.
  EXPECT_EQ(params["params"]["Dense_0"]["kernel"][0][0].get<double>(), -0.9536668658256531);
  EXPECT_EQ(params["params"]["Dense_2"]["bias"], nlohmann::json::parse("[0.0, 0.0, 0.0, 0.0]"));
}

TEST_F(CliTest, PluginsListsPluginsAndProblems) {
  const CliRun r = run(std::string("plugins --plugin-path ") + REMATKIT_FIXTURE_DIR);
  EXPECT_EQ(r.exit_code, 0) << r.err;  // problems are listed, not fatal
  EXPECT_NE(r.out.find("jax-policies 1.0.0 (ABI 1.8) "), std::string::npos) << r.out;
  // Each policy as it is called; one from a plugin built before ABI 1.1 has no signature to show.
  EXPECT_NE(r.out.find("  policies:\n    any_of(p1, p2, ...)\n    all_of(p1, p2, ...)\n    not_(p)\n"
                       "    save_if_bytes_at_least(p, N)\n  backends: -\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    save_only_these_names('a', ...)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fixture-older-minor 0.1 (ABI 1.0) "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    fixture_older_minor  (no signature)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("problem: " + std::string(REMATKIT_FIXTURE_DIR) +
                       "/librk_fixture_abi_major_2.so: plugin ABI 2.0 is incompatible"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("librk_fixture_no_entry.so: no rk_plugin_get_api symbol"), std::string::npos) << r.out;
}

TEST_F(CliTest, PluginsLogThroughTheHostWhenAsked) {
  // The host shows a plugin's info lines only with REMATKIT_LOG set; the highway backend says where
  // its kernels dispatch.
  const std::string line = "rematkit plugin: highway: kernels dispatch to ";
  EXPECT_EQ(run("plugins").err.find(line), std::string::npos);
  ::setenv("REMATKIT_LOG", "1", 1);
  const CliRun r = run("plugins");
  ::unsetenv("REMATKIT_LOG");
  EXPECT_NE(r.err.find(line), std::string::npos) << r.err;
}

TEST_F(CliTest, HighwayDispatchIsCappedWhereAsked) {
  // REMATKIT_HIGHWAY_MAX_TARGET caps the SIMD target (for measuring AVX2's kernels on an AVX-512
  // machine); a name that is no target of this build and CPU is warned about and changes nothing.
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "this CPU has no AVX2 to cap at";
  ::setenv("REMATKIT_LOG", "1", 1);
  ::setenv("REMATKIT_HIGHWAY_MAX_TARGET", "avx2", 1);
  const CliRun capped = run("plugins");
  ::setenv("REMATKIT_HIGHWAY_MAX_TARGET", "avx9", 1);
  const CliRun bad = run("plugins");
  ::unsetenv("REMATKIT_HIGHWAY_MAX_TARGET");
  ::unsetenv("REMATKIT_LOG");
  EXPECT_EQ(capped.exit_code, 0) << capped.err;
  EXPECT_NE(capped.err.find("highway: kernels dispatch to AVX2\n"), std::string::npos) << capped.err;
  EXPECT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_NE(bad.err.find("highway: REMATKIT_HIGHWAY_MAX_TARGET='avx9' is not a SIMD target of this build on this CPU "
                         "(one of "),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.out.find("backends: highway"), std::string::npos) << bad.out;
}

TEST_F(CliTest, BackendOptionsReachTheirBackendOrFailCleanly) {
  if (!backend_installed("onednn")) GTEST_SKIP() << "onednn is not built";
  const std::string program = write("p.jaxpr", "{ lambda ; x:f32[3]. let a:f32[3] = sin x in (a,) }");
  const std::string inputs = write("in.json", "{\"x\": [1, 2, 3]}");
  const std::string grad = "grad " + program + " --inputs " + inputs + " --backend onednn,reference ";
  const CliRun widened = run(grad + "--backend-option onednn.bf16_matmul=widened --backend-option onednn.num_threads=1");
  EXPECT_EQ(widened.exit_code, 0) << widened.err;
  EXPECT_EQ(widened.out, run(grad).out);
  expect_bad_input(grad + "--backend-option onednn.weights_layout=sideways",
                   "backend 'onednn' could not start: the onednn backend takes num_threads=N");
  expect_bad_input(grad + "--backend-option highway.x=1",
                   "backend option highway.x is for a backend not in the list (onednn, reference)");
  expect_bad_input(grad + "--backend-option weights_layout",
                   "backend option 'weights_layout': write it as BACKEND.NAME=VALUE, e.g. onednn.weights_layout=as_it_lies");
}

TEST_F(CliTest, PluginOptionLoadsAPolicyOrFailsCleanly) {
  const std::string program = write("p.jaxpr", "{ lambda ; x:f32[]. let a:f32[] = sin x; b:f32[] = sin a in (b,) }");
  const CliRun r = run(std::string("residuals --plugin ") + REMATKIT_EXAMPLE_PLUGIN +
                       " --policy \"save_only_these_primitives('cos')\" " + program);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  EXPECT_NE(r.out.find("f32[] output of cos"), std::string::npos) << r.out;
  expect_bad_input("residuals --plugin " + std::string(REMATKIT_FIXTURE_DIR) + "/librk_fixture_abi_major_2.so " + program,
                   "librk_fixture_abi_major_2.so: plugin ABI 2.0 is incompatible with this rematkit's ABI 1.8");
  expect_bad_input("residuals --plugin " + write("libjunk.so", "junk") + " " + program,
                   "libjunk.so: not a loadable plugin library");
}

TEST_F(CliTest, MlpBadInput) {
  expect_bad_input("mlp --seed 0 --features 4.5 --x 1,2", "features must be a positive integer, got 4.500000");
  expect_bad_input("mlp --seed -1 --features 4 --x 1,2", "seed must be a non-negative integer");
  expect_bad_input("mlp --seed 0 --features 4 --x 1,abc", "--x: 'abc' is not a number");
  expect_bad_input("mlp --seed 0 --features 4 --x 1,nan", "x[1] is nan: x must be finite");
  expect_bad_input("mlp --seed 0 --features 4", "give x with exactly one of --x and --x-file");
  expect_bad_input("mlp --seed 0 --features 4 --x 1 --prng fast", "--prng must be partitionable or legacy");
  expect_bad_input("mlp --seed 0 --features 4 --x-file " + write("bad.json", "{\"x\": 1}"),
                   "bad.json: must be a JSON array of numbers");
  expect_bad_input("mlp --seed 0 --features 4 --x 1 --policy nope", "unknown policy 'nope'");
}

}  // namespace
}  // namespace rematkit::testing

namespace rematkit::testing {
namespace {

// A scan over layers with a checkpoint in its body, as nn.scan(nn.remat(layer)) traces it.
const char* kScannedRemat = R"({ lambda ; x:f32[256] ws:f32[6,256]. let
    c:f32[256] = scan[
      _split_transpose=False
      jaxpr={ lambda ; d:f32[256] e:f32[256]. let
          g:f32[256] = checkpoint[
            differentiated=False
            jaxpr={ lambda ; h:f32[256] i:f32[256]. let
                j:f32[256] = mul h i
                k:f32[256] = sin j
              in (k,) }
            policy=everything_saveable
            prevent_cse=True
          ] d e
        in (g,) }
      length=6
      linear=(False, False)
      num_carry=1
      num_consts=0
      reverse=False
      unroll=1
    ] x ws
    l:f32[] = reduce_sum[axes=(0,) out_sharding=None] c
  in (l,) }
)";

// A price for re-sent bytes in the cost's own units: FLOPs with --cost flops, nanoseconds with
// --cost measured; given with the other cost, one line and exit 2.
TEST_F(CliTest, SolvePricesCollectivesInTheCostsUnits) {
  const std::string step = write("fsdp.jaxpr", with_policy(kFsdpStep, "nothing_saveable"));
  expect_bad_input("solve " + step + " --budget 0.5 --comm-ns-per-byte 2", "--comm-ns-per-byte is in nanoseconds: it goes with --cost measured");
  expect_bad_input("solve " + step + " --budget 0.5 --cost measured --comm-bandwidth 9",
                   "--comm-bandwidth is in FLOPs per byte: it goes with --cost flops");
  const CliRun measured = run("solve " + step + " --budget 0.5 --cost measured --comm-ns-per-byte 2 --backend reference");
  EXPECT_EQ(measured.exit_code, 0) << measured.err;
}

TEST_F(CliTest, SolveDecidesAScanBodyForEveryIterationAndItsDecisionsApplyInside) {
  const std::string program = write("scanned.jaxpr", kScannedRemat);
  const std::string decisions = (dir_ / "d.json").string();
  const CliRun solved = run("solve " + program + " --budget min --backend reference --decisions " + decisions);
  ASSERT_EQ(solved.exit_code, 0) << solved.err;
  // The body's sites name the scan at 2:18; each decision holds for all six iterations.
  EXPECT_NE(solved.out.find("[2:18#0/8:30#0]"), std::string::npos) << solved.out;
  EXPECT_NE(solved.out.find("in a scan body, for all 6 iterations: recomputed"), std::string::npos) << solved.out;
  EXPECT_NE(solved.out.find("a fraction's 0 is"), std::string::npos);
  EXPECT_NE(solved.out.find("method: dynamic programming"), std::string::npos) << solved.out;
  // Replayed by --retarget-policy inside the body: one stacked residual fewer than the program's own.
  const CliRun own = run("residuals " + program);
  const CliRun replayed = run("residuals " + program + " --retarget-policy \"solved('" + decisions + "')\"");
  ASSERT_EQ(replayed.exit_code, 0) << replayed.err;
  EXPECT_EQ(count_of(own.out, "output of scan"), count_of(replayed.out, "output of scan") + 1) << own.out << replayed.out;
  // The smallest peak recomputes both read values in every iteration: nothing_saveable's, as the
  // planner gives it for the body's checkpoint; without the structured search, the same peak.
  const auto bytes_after = [](const std::string& text, const std::string& label) -> long long {
    const size_t at = text.find(label);
    if (at == std::string::npos) return -1;
    const size_t open = text.find('(', at);
    return open == std::string::npos ? -1 : std::stoll(text.substr(open + 1));
  };
  const CliRun nothing = run("memory " + program + " --retarget-policy nothing_saveable --backend reference");
  ASSERT_EQ(nothing.exit_code, 0) << nothing.err;
  const long long nothing_peak = bytes_after(nothing.out, "device memory alive there: ");
  ASSERT_GT(nothing_peak, 0) << nothing.out;
  EXPECT_EQ(bytes_after(solved.out, "peak: "), nothing_peak) << solved.out;
  const CliRun program_alone = run("solve " + program + " --budget min --backend reference --no-structure");
  ASSERT_EQ(program_alone.exit_code, 0) << program_alone.err;
  EXPECT_EQ(program_alone.out.find("dynamic programming"), std::string::npos) << program_alone.out;
  EXPECT_EQ(bytes_after(program_alone.out, "peak: "), nothing_peak) << program_alone.out;
}

// A sin chain whose values are named a, b and c. sin's JVP multiplies by the cosine of its operand,
// a coefficient equation at the sin's place, so the backward pass reads three cos values and no
// named one; mul's JVP reads its operands, so in the mul chain it reads a and b (and the argument).
std::string named_chain(const std::string& op) {
  return "{ lambda ; x:f32[1024]. let\n"
         "    a:f32[] = checkpoint[\n"
         "      differentiated=False\n"
         "      jaxpr={ lambda ; b:f32[1024]. let\n"
         "          c:f32[1024] = " + op + "\n"
         "          d:f32[1024] = name[name=a] c\n"
         "          e:f32[1024] = " + (op == "sin b" ? std::string("sin d") : std::string("mul d d")) + "\n"
         "          f:f32[1024] = name[name=b] e\n"
         "          g:f32[1024] = " + (op == "sin b" ? std::string("sin f") : std::string("mul f f")) + "\n"
         "          h:f32[1024] = name[name=c] g\n"
         "          i:f32[] = reduce_sum[axes=(0,)] h\n"
         "        in (i,) }\n"
         "      policy=nothing_saveable\n"
         "      prevent_cse=True\n"
         "    ] x\n"
         "  in (a,) }\n";
}

TEST_F(CliTest, SolveExportsJaxNamesPolicyWhenNamesSayTheAnswerAndSaysWhyNotOtherwise) {
  // At a fraction's 1, everything_saveable: it recomputes nothing.
  const std::string policy = (dir_ / "policy.py").string();
  const CliRun named = run("solve " + write("mul.jaxpr", named_chain("mul b b")) +
                           " --budget 1 --backend reference --export-jax " + policy);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_TRUE(named.err.empty()) << named.err;
  const std::string names_py = read_text(policy);
  EXPECT_NE(names_py.find("\nimport jax\n\npolicy = jax.checkpoint_policies.save_only_these_names(\"a\", \"b\")\n"),
            std::string::npos) << names_py;
  const CliRun unnamed = run("solve " + write("sin.jaxpr", named_chain("sin b")) +
                             " --budget 1 --backend reference --export-jax " + policy);
  ASSERT_EQ(unnamed.exit_code, 0) << unnamed.err;
  const std::string why = "the answer keeps 3 unnamed values: cos at 5:25, cos at 7:25, cos at 9:25";
  EXPECT_EQ(unnamed.err, "rematkit: warning: --export-jax wrote a Python function policy, not a names policy: " + why +
                             "; under jax_remat3 a function policy is not called (everything is recomputed)\n");
  const std::string function_py = read_text(policy);
  EXPECT_NE(function_py.find("# Not a names policy: " + why + ".\n"), std::string::npos) << function_py;
  EXPECT_NE(function_py.find("def policy(prim, *avals, **params):"), std::string::npos) << function_py;
}

TEST_F(CliTest, ProgramPrintsASweepModelThatReadsBackIntoResidualsSolveAndMemory) {
  const CliRun printed = run("program --model gpt-small --policy dots_saveable");
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  // The header says which arguments the sweep trains; given back as --wrt, the data gets no gradient.
  const size_t at = printed.out.find("--wrt ");
  ASSERT_NE(at, std::string::npos) << printed.out.substr(0, 300);
  const std::string wrt = printed.out.substr(at + 6, printed.out.find_first_of(" .\n", at + 6) - (at + 6));
  ASSERT_FALSE(wrt.empty());
  const std::string file = write("gpt.jaxpr", printed.out);
  const CliRun residuals = run("residuals " + file + " --wrt " + wrt);
  ASSERT_EQ(residuals.exit_code, 0) << residuals.err;
  EXPECT_NE(residuals.out.find("output of dot_general"), std::string::npos) << residuals.out;
  const CliRun memory = run("memory " + file + " --wrt " + wrt + " --backend highway,reference");
  EXPECT_EQ(memory.exit_code, 0) << memory.err;
  const CliRun solved = run("solve " + file + " --wrt " + wrt + " --budget 0.5 --time-limit 2 --backend highway,reference");
  EXPECT_EQ(solved.exit_code, 0) << solved.err;
  // An MLP's data is floating: without --wrt it would get a gradient too, and other residuals.
  const CliRun mlp = run("program --model mlp-relu-per-layer");
  ASSERT_EQ(mlp.exit_code, 0) << mlp.err;
  EXPECT_NE(mlp.out.find("--wrt 1,2,"), std::string::npos) << mlp.out.substr(0, 300);
  const std::string mlp_file = write("mlp.jaxpr", mlp.out);
  const CliRun params_only = run("residuals " + mlp_file + " --wrt 1,2,3,4,5,6,7,8");
  const CliRun with_data = run("residuals " + mlp_file);
  ASSERT_EQ(params_only.exit_code, 0) << params_only.err;
  EXPECT_NE(with_data.out, params_only.out);
}

TEST_F(CliTest, ProgramNamesTheModelItDoesNotKnow) {
  const CliRun misspelt = run("program --model gpt-smal");
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_NE(misspelt.err.find("'gpt-smal' is not a model of <default sweep> (did you mean 'gpt-small'?)"), std::string::npos)
      << misspelt.err;
  const CliRun unnamed = run("program");
  EXPECT_EQ(unnamed.exit_code, 2);
  EXPECT_NE(unnamed.err.find("choose one with --model (mlp-relu-per-layer, "), std::string::npos) << unnamed.err;
  const CliRun policy = run("program --model cnn-tiny --policy dots_savable");
  EXPECT_EQ(policy.exit_code, 2);
  EXPECT_NE(policy.err.find("dots_savable"), std::string::npos) << policy.err;
  const std::string sweep = write("one.yaml", "models:\n  - mlp: {input: 3, widths: [2]}\npolicies: [nothing_saveable]\nbackends: [reference]\n");
  const CliRun one = run("program " + sweep);
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("dot_general"), std::string::npos);
}

class CliLimitsTest : public CliTest {};

TEST_F(CliLimitsTest, APluginFileThatDoesNotLoadIsBadInputForEveryCommand) {
  const std::string program = write("p.jaxpr", kSquareSum);
  const std::string inputs = write("in.json", R"({"x": [1, 2, 3], "w": [[1, 0, 1], [0, 1, 0]]})");
  const std::string sweep = write("s.yaml", "models:\n  - mlp: {input: 3, widths: [2]}\npolicies: [nothing_saveable]\n"
                                            "backends: [reference]\nrepetitions: 1\n");
  for (const std::string& command :
       {"residuals " + program, "check " + program, "grad " + program + " --inputs " + inputs, "memory " + program,
        "compare " + program + " --policy nothing_saveable --policy everything_saveable", std::string("mlp --seed 0 --features 4 --x 1,2"),
        "solve " + program +
        " --budget 0.5", "sweep " + sweep, "program " + sweep}) {
    SCOPED_TRACE(command);
    const CliRun r = run(command + " --plugin /etc/passwd");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("/etc/passwd: not a loadable plugin library"), std::string::npos) << r.err;
    EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  }
}

TEST_F(CliLimitsTest, MaxMemoryRefusesAStepBeforeItRuns) {
  const std::string program = write("p.jaxpr", kSquareSum);
  const std::string inputs = write("in.json", R"({"x": [1, 2, 3], "w": [[1, 0, 1], [0, 1, 0]]})");
  expect_bad_input("grad " + program + " --inputs " + inputs + " --max-memory 16B",
                   "bytes) is over the memory limit of 16 B (16 bytes); nothing was allocated");
  expect_bad_input("grad " + program + " --inputs " + inputs + " --max-memory lots",
                   "--max-memory: 'lots' is not a size in bytes (such as 8GiB, 512MiB or 1e9)");
  const CliRun fits = run("grad " + program + " --inputs " + inputs + " --max-memory 1MiB");
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  // compare draws inputs when given none: 8 TB of them are refused before they are drawn.
  const std::string huge = write("huge.jaxpr", "{ lambda ; a:f32[1000000,1000000]. let\n"
                                               "    b:f32[] = reduce_sum[axes=(0, 1)] a\n  in (b,) }\n");
  expect_bad_input("compare " + huge + " --policy nothing_saveable", "the program's inputs of 7.28 TiB (8000000000000 bytes)");
  expect_bad_input("sweep " + write("m.yaml", "models:\n  - mlp: {input: 3, widths: [2]}\npolicies: [nothing_saveable]\n"
                                              "backends: [reference]\n") + " --max-memory 0",
                   "--max-memory: '0' is not a size in bytes");
}

// Input nested past rematkit's limits, however deep, is one line and exit code 2 in every reader
// (the three jaxprs and the policy spec crashed the reader before: issue 42).
TEST_F(CliTest, InputNestedPastTheLimitsIsOneLineInEveryReader) {
  auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const std::string limit = " deep (rematkit's limit, docs/program-format.md#limits)";
  const std::string braces = write("braces.jaxpr", "{ lambda ; a:f32[]. let b:f32[] = checkpoint[jaxpr=" + repeat("{", 50000));
  expect_bad_input("residuals " + braces, "braces.jaxpr:1:562: brackets nested more than 512" + limit);
  const std::string unclosed = write("unclosed.jaxpr", "{ lambda ; a:f32[]. let\n" +
                                     repeat("b:f32[] = checkpoint[jaxpr={ lambda ; c:f32[]. let\n", 20000));
  // The 129th program opens on line 129 (line 1 holds the main one), after "b:f32[] = checkpoint[jaxpr=".
  expect_bad_input("memory " + unclosed, "unclosed.jaxpr:129:28: programs nested more than 128" + limit);
  const std::string program = write("p.jaxpr", "{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }\n");
  // 20,000 deep would not fit one command-line argument (128 KiB); the unit tests read that many.
  const std::string nots = repeat("not_(", 5000) + "dots_saveable" + repeat(")", 5000);
  expect_bad_input("residuals " + program + " --retarget-policy '" + nots + "'",
                   "--retarget-policy:1:2565: brackets nested more than 512" + limit);
  expect_bad_input("residuals " + program + " --policy '" + nots + "'", "--policy:1:2565: brackets nested more than 512" + limit);

  // The 256th '[' after `{"a": ` opens the 257th level.
  const std::string inputs = write("deep.json", "{\"a\": " + repeat("[", 100000) + repeat("]", 100000) + "}");
  expect_bad_input("grad " + program + " --inputs " + inputs,
                   "deep.json:1:262: JSON arrays and objects nested more than 256" + limit);
  // Past yaml-cpp's own bound the place is where its parser stopped.
  const std::string yaml = write("deep.yaml", "models: " + repeat("[", 100000) + "\n");
  expect_bad_input("sweep " + yaml, "deep.yaml:2:1: YAML collections nested more than 256" + limit);
  const std::string closed = write("closed.yaml", "models: " + repeat("[", 300) + repeat("]", 300) + "\n");
  // The root map is level 1: the 256th '[' after "models: " opens the 257th.
  expect_bad_input("sweep " + closed, "closed.yaml:1:264: YAML collections nested more than 256" + limit);
  const std::string sweep = write("policy.yaml", "models:\n  - mlp: {input: 3, widths: [2], batch: 2}\npolicies: [\"" +
                                                     nots + "\"]\nbackends: [reference]\n");
  expect_bad_input("sweep " + sweep, "brackets nested more than 512" + limit);
}

// A debug print runs as a no-op, or prints with --debug-prints: once without a checkpoint, and
// again where the checkpoint's policy (None: nothing_saveable) recomputes it (debugging.py).
TEST_F(CliTest, DebugPrintsPrintWhereTheyRun) {
  const std::string program = write("p.jaxpr", R"({ lambda ; a:f32[2]. let
    b:f32[2] = checkpoint[jaxpr={ lambda ; c:f32[2]. let
        d:f32[2] = mul c 3.0:f32[]
        debug_print[fmt=d is {} has_placeholders=True ordered=False partitioned=False static_args=()] d
        e:f32[2] = sin d
      in (e,) } policy=None prevent_cse=True differentiated=False] a
    debug_callback[callback=<function f at 0x7f> effect=Debug] a
    f:f32[] = reduce_sum[axes=(0,)] b
  in (f,) })");
  const std::string inputs = write("in.json", R"({"a": [1, -0.5]})");
  const CliRun quiet = run("grad " + program + " --inputs " + inputs + " --backend reference");
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
  const CliRun loud = run("grad " + program + " --inputs " + inputs + " --backend reference --debug-prints");
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_EQ(loud.out, quiet.out);
  EXPECT_EQ(loud.err, "d is [3 -1.5]\ndebug_callback at " + program + ":7:5: [1 -0.5]\nd is [3 -1.5]\n");
}

// A complex argument and output: each element [re, im] in and out; z * conj(z) = |z|^2 and its
// gradient by JAX's convention, 2x - 2iy (worked out by hand). Bad complex input is one line.
TEST_F(CliTest, ComplexValuesAreRealImaginaryPairs) {
  const std::string program = write("p.jaxpr", R"({ lambda ; z:c64[2]. let
    c:c64[2] = conj[input_dtype=complex64] z
    m:c64[2] = mul z c
    r:f32[2] = real m
    s:f32[] = reduce_sum[axes=(0,)] r
  in (s, c) })");
  const CliRun ok = run("grad " + program + " --inputs " + write("in.json", R"({"z": [[3, 4], [-1, 0.5]]})"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  // The gradient of s + Re(sum(conj z)): 2 conj(z) + 1 (conj's transpose, of the real cotangent 1 + 0j).
  EXPECT_EQ(ok.out, "{\"value\": [26.25, [[3, -4], [-1, -0.5]]], \"grads\": {\"z\": [[7, -8], [-1, -1]]}}\n");
  const CliRun bad = run("grad " + program + " --inputs " + write("bad.json", R"({"z": [3, 4]})"));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "rematkit: " + (dir_ / "bad.json").string() + ": input 'z'[0] must be a list of 2 (the binder's shape is [2,2]), got number\n");
  const CliRun refused = run("residuals " + write("tanh.jaxpr", "{ lambda ; z:c64[2]. let y:c64[2] = tanh z in (y,) }"));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("tanh.jaxpr:1:37: tanh of a complex operand (c64[2]) is not supported"), std::string::npos)
      << refused.err;
}

}  // namespace
}  // namespace rematkit::testing
