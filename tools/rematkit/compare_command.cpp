// rematkit compare: one program under several policies, side by side. Every policy is planned, the
// gradients of all are run at once (one oneTBB task and thread each, concurrent_gradients.hpp) and
// must be the same bytes; then one table of what each keeps, and each one's peak and recompute cost.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kept_values.hpp"
#include "rematkit/runtime/concurrent_gradients.hpp"
#include "rematkit/analysis/flops.hpp"
#include "rematkit/analysis/gradient_difference.hpp"
#include "rematkit/analysis/memory_report.hpp"
#include "rematkit/io/tensor_json.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/api/plan.hpp"
#include "rematkit/runtime/mesh_step_runner.hpp"
#include "rematkit/sweep/sweep_models.hpp"
#ifdef REMATKIT_HAVE_MPI
#include "rematkit/mpi/mpi_transport.hpp"
#endif

namespace rematkit::cli {
namespace {

constexpr size_t kTableWidth = 120;
constexpr uint64_t kInputSeed = 0;  // inputs drawn when no --inputs file is given

struct CompareOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  std::string file;
  std::string inputs;
  std::vector<std::string> policies;
  BackendChoice backends;
  int threads = 1;
  bool json = false;
  std::string max_memory;
  double rank_timeout = 60;  // under mpirun
};

// A policy's column: A, B, ... Z, then P27, P28, ...
std::string column_name(size_t p) {
  return p < 26 ? std::string(1, static_cast<char>('A' + p)) : "P" + std::to_string(p + 1);
}

// 16 B, 4.0 KiB, 12 KiB, 1.5 MiB: at most 4 digits, so a cell stays narrow.
std::string narrow_bytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024;
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string cell_text(const KeptCell& cell) {
  switch (cell.as) {
    case KeptAs::kKept: return "kept " + narrow_bytes(cell.bytes);
    case KeptAs::kOffloaded: return "offloaded " + narrow_bytes(cell.bytes);
    case KeptAs::kRecomputed: return "recomputed";
    case KeptAs::kNotRead: break;
  }
  return "-";
}

// The row's value as the table names it, cut to `width` in its origin so its type and line stay.
std::string row_label(const KeptValueRow& row, size_t width) {
  const std::string line = row.line > 0 ? ", line " + std::to_string(row.line) : "";
  std::string origin = row.origin;
  const size_t fixed = row.type.size() + 1 + line.size();
  if (fixed + origin.size() > width && width > fixed + 3) origin = origin.substr(0, width - fixed - 3) + "...";
  return row.type + " " + origin + line;
}

// 0.512 ms, 46.5 ms, 88.5 s.
std::string milliseconds(double ms) {
  char buf[32];
  if (ms < 1000) std::snprintf(buf, sizeof buf, "%.3g ms", ms);
  else std::snprintf(buf, sizeof buf, "%.3g s", ms / 1000);
  return buf;
}

template <typename Run>
double wall_ms(const Run& run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Where a gradient is not the same bytes as the first policy's first run.
struct Mismatch {
  size_t policy = 0;
  std::string run;  // "all at once" or "one after another"
  size_t argument = 0;
  double max_abs_diff = 0;
};

// What is live at a policy's predicted peak, under its summary line (--json has the peak alone;
// `rematkit memory --json` has the buffers).
void print_live_at_peak(const Plan& plan) {
  std::cout << "   predicted peak:";
  for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost}) {
    const int64_t peak = plan.predicted_peak(space);
    if (space != MemorySpace::kDevice && peak == 0) continue;
    std::cout << (space == MemorySpace::kDevice ? " " : ", ") << memory_space_name(space) << " " << narrow_bytes(peak);
    if (peak >= 1024) std::cout << " (" << peak << " bytes)";
  }
  std::cout << "\n";
  const MemoryReport& report = plan.memory_report();
  if (report.peak_step < 0) return;
  const StepMemory& step = report.steps[static_cast<size_t>(report.peak_step)];
  const std::string head = "   alive at its peak, step " + std::to_string(report.peak_step) + " (" +
                           std::string(pass_name(step.pass)) + ": ";
  std::string what = step.what;  // within the table's 120 columns: a long path loses its middle
  if (head.size() + what.size() + 2 > 120) {
    const size_t keep = 120 - head.size() - 2 - 3;
    what = what.substr(0, keep / 2) + "..." + what.substr(what.size() - (keep - keep / 2));
  }
  std::cout << head << what << "):\n";
  for (int b : report.peak_buffers) {
    const BufferMemory& m = report.buffers[static_cast<size_t>(b)];
    std::cout << "     " << buffer_kind_name(m.kind) << " " << human_bytes(m.bytes) << "  " << m.source << "\n";
  }
}

struct Comparison {
  std::string program_name;
  std::vector<std::string> policies;
  std::vector<Plan> plans;
  std::vector<KeptValueRow> rows;
  std::vector<std::string> argument_names;  // of the program, in binder order
  size_t gradients = 0;                     // arguments with a gradient
  std::vector<Mismatch> mismatches;
  double all_at_once_ms = 0, one_by_one_ms = 0;
  int one_by_one_threads = 1;
  int ranks = 0;  // under mpirun: a rank per device, the policies one after another
};

void print_table(const Comparison& c) {
  std::cout << "rematkit compare: " << c.program_name << ", " << c.policies.size() << " policies\n";
  for (size_t p = 0; p < c.policies.size(); ++p) std::cout << "  " << column_name(p) << "  " << c.policies[p] << "\n";
  std::cout << "\n";
  // Cells as wide as the widest in their column; the value column gets what is left of the width.
  std::vector<size_t> width(c.policies.size());
  for (size_t p = 0; p < c.policies.size(); ++p) {
    width[p] = column_name(p).size();
    for (const KeptValueRow& row : c.rows) width[p] = std::max(width[p], cell_text(row.cells[p]).size());
  }
  size_t cells = 0;
  for (size_t w : width) cells += 2 + w;
  const std::string header = "value kept for the backward pass";
  size_t label_width = header.size();
  for (const KeptValueRow& row : c.rows) label_width = std::max(label_width, row_label(row, SIZE_MAX).size());
  label_width = std::min(label_width, std::max<size_t>(header.size(), kTableWidth > cells ? kTableWidth - cells : 0));
  auto print_line = [&](const std::string& label, const std::vector<std::string>& texts) {
    std::string line = label + std::string(label_width > label.size() ? label_width - label.size() : 0, ' ');
    for (size_t p = 0; p < texts.size(); ++p) line += "  " + texts[p] + std::string(width[p] - texts[p].size(), ' ');
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  };
  std::vector<std::string> names;
  for (size_t p = 0; p < c.policies.size(); ++p) names.push_back(column_name(p));
  print_line(header, names);
  for (const KeptValueRow& row : c.rows) {
    std::vector<std::string> texts;
    for (const KeptCell& cell : row.cells) texts.push_back(cell_text(cell));
    print_line(row_label(row, label_width), texts);
  }
  std::cout << "(kept: a residual in device memory; offloaded: copied to pinned host memory; recomputed: by the backward "
               "pass;\n -: not read by that policy's backward pass)\n\n";
  for (size_t p = 0; p < c.policies.size(); ++p) {
    const Linearization& lin = c.plans[p].linearization();
    const GradientFlops flops = gradient_flops(lin);
    std::cout << column_name(p) << "  keeps " << lin.residuals.size() << " value(s), "
              << narrow_bytes(c.plans[p].residual_bytes()) << "; recomputes " << flops.recompute << " FLOPs (forward "
              << flops.forward << ", backward " << flops.backward << ")\n";
    print_live_at_peak(c.plans[p]);
  }
  std::cout << "\ngradients: ";
  const std::string runs = c.ranks ? "a rank per device on " + std::to_string(c.ranks) + " ranks, twice, one policy after another"
                                   : "all at once, twice, and one after another";
  if (c.mismatches.empty())
    std::cout << "the same bytes under every policy (" << c.gradients << " argument(s); " << runs << ")\n";
  else
    std::cout << c.mismatches.size() << " mismatch(es), listed on stderr\n";
  if (c.ranks) {
    std::cout << "wall time, measured once after a warm-up: one after another " << milliseconds(c.one_by_one_ms)
              << " (a rank per device)\n";
    return;
  }
  // Each run builds every policy's step program and runs it once; one measurement, not a median.
  const std::string threads = c.one_by_one_threads == 1 ? "1 thread per run"
                              : "all at once 1 thread per run, one after another " +
                                    (c.one_by_one_threads ? std::to_string(c.one_by_one_threads) : std::string("every core"));
  std::cout << "wall time, measured once after a warm-up: all at once " << milliseconds(c.all_at_once_ms)
            << ", one after another " << milliseconds(c.one_by_one_ms) << " (" << threads << ")\n";
}

void print_json(const Comparison& c) {
  nlohmann::ordered_json j;
  j["program"] = c.program_name;
  j["policies"] = nlohmann::ordered_json::array();
  for (size_t p = 0; p < c.policies.size(); ++p) {
    const Linearization& lin = c.plans[p].linearization();
    const GradientFlops flops = gradient_flops(lin);
    nlohmann::ordered_json policy;
    policy["column"] = column_name(p);
    policy["policy"] = c.policies[p];
    policy["residuals"] = lin.residuals.size();
    policy["residual_bytes"] = c.plans[p].residual_bytes();
    policy["flops"] = {{"forward", flops.forward}, {"recompute", flops.recompute}, {"backward", flops.backward}};
    for (MemorySpace space : {MemorySpace::kDevice, MemorySpace::kPinnedHost})
      policy["predicted_peak"][std::string(memory_space_name(space))] = c.plans[p].predicted_peak(space);
    j["policies"].push_back(policy);
  }
  j["values"] = nlohmann::ordered_json::array();
  for (const KeptValueRow& row : c.rows) {
    nlohmann::ordered_json value;
    value["value"] = row_label(row, SIZE_MAX);
    value["type"] = row.type;
    value["origin"] = row.origin;
    value["line"] = row.line;
    value["policies"] = nlohmann::ordered_json::array();
    for (const KeptCell& cell : row.cells) {
      nlohmann::ordered_json entry{{"as", kept_as_name(cell.as)}};
      if (cell.as == KeptAs::kKept || cell.as == KeptAs::kOffloaded) entry["bytes"] = cell.bytes;
      value["policies"].push_back(entry);
    }
    j["values"].push_back(value);
  }
  j["gradients"]["identical"] = c.mismatches.empty();
  j["gradients"]["arguments"] = c.gradients;
  j["gradients"]["mismatches"] = nlohmann::ordered_json::array();
  for (const Mismatch& m : c.mismatches)
    j["gradients"]["mismatches"].push_back({{"policy", c.policies[m.policy]},
                                            {"run", m.run},
                                            {"argument", c.argument_names[m.argument]},
                                            {"max_abs_diff", m.max_abs_diff}});  // NaN is written as null
  if (c.ranks)  // a rank per device: the policies one after another only
    j["wall_ms"] = {{"one_after_another", c.one_by_one_ms}, {"ranks", c.ranks}, {"measured_once", true}};
  else
    j["wall_ms"] = {{"all_at_once", c.all_at_once_ms},
                    {"one_after_another", c.one_by_one_ms},
                    {"one_after_another_threads", c.one_by_one_threads},
                    {"measured_once", true}};
  std::cout << j.dump(2) << "\n";
}

// The program, planned under every policy, with the table of what each keeps, and its inputs.
struct Planned {
  Program program;
  Comparison comparison;
  BackendOptions backends;
  std::vector<const Linearization*> lins;  // a Plan keeps its linearization in place when moved
  std::vector<Tensor> constants, arguments;
};

Planned planned(const CompareOptions& o) {
  Planned out;
  const ProgramSource source = command_program_source(o.file);
  out.program = edited_program(parse_program(source.text, source.name, command_arg_types(o.edits)), o.edits);
  const Program& program = out.program;
  const PluginRegistry& plugins = command_plugins(o.plugins);
  // Every spec is checked before anything is planned, so an error names the option.
  for (const std::string& policy : o.policies) plugins.policies().parse(policy, SourceLocation{"--policy", 0, 0});
  const LinearizeOptions lin_options = linearize_options(o.plugins, "", program, o.edits);
  if (!o.inputs.empty()) {
    ProgramInputs inputs = load_program_inputs(o.inputs, program);
    out.constants = std::move(inputs.constants);
    out.arguments = std::move(inputs.arguments);
  } else {
    sweep::ModelInstance drawn = sweep::program_instance(program, kInputSeed, memory_limit(o.max_memory));
    out.constants = std::move(drawn.constants);
    out.arguments = std::move(drawn.arguments);
  }

  Comparison& c = out.comparison;
  c.program_name = source.name;
  c.policies = o.policies;
  c.one_by_one_threads = o.threads;
  BackendOptions& backends = out.backends;
  backends = o.backends.backend_options(plugins);
  backends.threads = o.threads;
  backends.max_memory = memory_limit(o.max_memory);
  c.plans.reserve(o.policies.size());
  for (const std::string& policy : o.policies) {
    c.plans.emplace_back(program, PlanOptions{policy, backends, lin_options.differentiate});
    out.lins.push_back(&c.plans.back().linearization());
  }
  c.rows = kept_value_rows(out.lins);
  for (int v : program.invars) c.argument_names.push_back(program.vars[static_cast<size_t>(v)].name);
  return out;
}

// `runs`' gradients against `first`, the first policy's first run (from `from` on).
void check_gradients(Comparison& c, const GradientResult& first, const std::vector<GradientResult>& runs, const char* run,
                     size_t from) {
  for (size_t p = from; p < runs.size(); ++p) {
    const std::vector<ArgumentDifference> diffs = gradient_differences(first, runs[p]);
    for (size_t a = 0; a < diffs.size(); ++a)
      if (!diffs[a].identical) c.mismatches.push_back(Mismatch{p, run, a, diffs[a].max_abs_diff});
  }
}

// The table or JSON; with differences, each on stderr and exit code 1 (remat must not change the
// arithmetic: a difference is rematkit's failure).
void report(const CompareOptions& o, const Comparison& c) {
  if (o.json) print_json(c);
  else print_table(c);
  std::cout << std::flush;
  if (c.mismatches.empty()) return;
  for (const Mismatch& m : c.mismatches)
    std::cerr << "rematkit: gradients differ: argument '" << c.argument_names[m.argument] << "' under "
              << column_name(m.policy) << " (" << c.policies[m.policy] << "), run " << m.run << ", against "
              << column_name(0) << " (" << c.policies[0] << "): max abs diff " << m.max_abs_diff << "\n";
  throw ExitCode{1};
}

void run_compare(const CompareOptions& o) {
  Planned p = planned(o);
  Comparison& c = p.comparison;
  // The check run, all at once; it also warms up what the timed runs below use.
  const std::vector<GradientResult> first = run_gradients(p.lins, p.constants, p.arguments, p.backends, Concurrency::kAllAtOnce);
  std::vector<GradientResult> one_by_one, all_at_once;
  c.one_by_one_ms = wall_ms([&] { one_by_one = run_gradients(p.lins, p.constants, p.arguments, p.backends, Concurrency::kOneByOne); });
  c.all_at_once_ms = wall_ms([&] { all_at_once = run_gradients(p.lins, p.constants, p.arguments, p.backends, Concurrency::kAllAtOnce); });
  for (const std::optional<Tensor>& g : first[0].gradients) c.gradients += g ? 1 : 0;
  check_gradients(c, first[0], first, "all at once", 1);
  check_gradients(c, first[0], all_at_once, "all at once", 0);
  check_gradients(c, first[0], one_by_one, "one after another", 0);
  report(o, c);
}

#ifdef REMATKIT_HAVE_MPI
// Under mpirun: this rank is one device of the program's mesh. Each policy's step runs on every rank
// at once, the policies one after another (a rank's collectives are one exchange at a time), twice;
// each rank checks its gradients against the first policy's, and the ranks agree on the verdict.
// A rank that fails says so where the others next compare notes, so every rank stops with the same
// error; rank 0 alone prints, and every rank exits with the same code.
void run_compare_on_ranks(const CompareOptions& o) {
  const mpi::MpiSession session;
  try {
    std::optional<Planned> p;
    std::optional<mpi::MpiTransport> transport;
    int64_t mismatches = 0;
    try {
      p.emplace(planned(o));
      const Linearization& lin = *p->lins[0];
      if (!lin.graph.mesh)
        fail("under mpirun, compare runs a program on a mesh, a rank per device: " + p->comparison.program_name +
             " has no shard_map or pmap");
      const Mesh& mesh = *lin.graph.mesh;
      transport.emplace(session, mesh, o.rank_timeout);
      std::vector<std::unique_ptr<MeshStepRunner>> runners;
      for (const Linearization* policy : p->lins) runners.push_back(std::make_unique<MeshStepRunner>(*policy, mesh, p->backends));
      auto run_all = [&] {
        std::vector<GradientResult> results;
        for (auto& runner : runners) results.push_back(runner->run(*transport, p->constants, p->arguments));
        return results;
      };
      const std::vector<GradientResult> first = run_all();
      std::vector<GradientResult> again;
      Comparison& c = p->comparison;
      c.ranks = session.size();
      c.one_by_one_ms = wall_ms([&] { again = run_all(); });
      for (const std::optional<Tensor>& g : first[0].gradients) c.gradients += g ? 1 : 0;
      check_gradients(c, first[0], first, "one after another", 1);
      check_gradients(c, first[0], again, "one after another", 0);
      const auto mine = static_cast<int64_t>(c.mismatches.size());
      std::vector<int64_t> everyone(static_cast<size_t>(mesh.num_devices())), all(everyone.size());
      for (size_t d = 0; d < everyone.size(); ++d) everyone[d] = static_cast<int64_t>(d);
      transport->all_gather("the ranks' gradient mismatches", everyone, &mine, sizeof mine, all.data());
      for (int64_t n : all) mismatches += n;
    } catch (const Error& e) {
      session.stopped(e, o.rank_timeout);
    }
    if (session.rank() == 0) report(o, p->comparison);
    else if (mismatches > 0) throw ExitCode{1};
  } catch (const Error& e) {
    if (session.rank() == 0) std::cerr << "rematkit: " << e.what() << std::endl;
    session.barrier(o.rank_timeout);
    throw ExitCode{e.kind() == ErrorKind::kBadInput ? 2 : 1};
  }
}
#endif

}  // namespace

void add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand("compare", "FILE under several policies side by side, their gradients run at once");
  cmd->footer(
      "Plans FILE's gradient under every --policy (each checkpoints the whole program), runs all of them at\n"
      "once as oneTBB tasks, one thread each, and checks that their gradients are the same bytes. Prints a\n"
      "column per policy (A, B, ...) and a row for every value any of them keeps: 'kept' and its bytes,\n"
      "'offloaded' (to pinned host memory), 'recomputed' by the backward pass, or '-' (not read by it);\n"
      "then each policy's residual bytes, recompute FLOPs and predicted peak, and the wall time of the runs\n"
      "all at once and one after another (one measurement each). Inputs: --inputs, else uniform in [-1, 1]\n"
      "from seed 0. Exit code 1 when the gradients differ (each difference on stderr), 2 for bad input.\n"
      "\n"
      "A program on a mesh (shard_map, pmap) runs a step program per device: in this process, a thread per\n"
      "device; under mpirun, a rank per device (mpirun -n 4 rematkit compare step.jaxpr --policy ...), the\n"
      "policies one after another, rank 0 printing.");
  cmd->add_option("FILE", options->file,
                  "a program in jaxpr syntax; '-' reads standard input (default: piped input, else the built-in example)");
  cmd->add_option("--policy", options->policies, "a policy to compare, checkpointing the whole program (repeatable)")
      ->required()
      ->allow_extra_args(false);  // one spec per --policy: FILE may follow
  cmd->add_option("--inputs", options->inputs,
                  "a JSON object mapping every argument and constant name to a number or nested list");
  add_program_edit_options(cmd, options->edits);
  add_plugin_option(cmd, options->plugins);
  add_backend_option(cmd, options->backends);
  add_memory_limit_option(cmd, options->max_memory);
  cmd->add_option("--threads", options->threads,
                  "threads of each run in the one-after-another measurement (0: every core; default 1, as each gets "
                  "all at once)")
      ->check(CLI::Range(0, 1024));
  cmd->add_flag("--json", options->json, "print everything as one JSON object instead of the table");
  add_rank_timeout_option(cmd, options->rank_timeout);
  cmd->callback([options]() {
    if (!launched_rank()) return run_compare(*options);
#ifdef REMATKIT_HAVE_MPI
    run_compare_on_ranks(*options);
#else
    if (*launched_rank() == 0)
      fail("this rematkit was built without MPI, so its ranks would each run the whole comparison: install libopenmpi-dev and rebuild");
    throw ExitCode{2};
#endif
  });
}

}  // namespace rematkit::cli
