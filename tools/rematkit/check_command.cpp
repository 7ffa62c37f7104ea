#include <iostream>

#include "commands.hpp"
#include "rematkit/control_flow_params.hpp"
#include "rematkit/error.hpp"
#include "rematkit/parser.hpp"

namespace rematkit::cli {
namespace {

// The values of `program` and its sub-programs that carry JAX's sharding annotations, as written.
void collect_sharded(const Program& program, std::vector<std::string>& out) {
  for (const Var& v : program.vars)
    if (!v.sharding.empty()) out.push_back(v.name + ":" + v.sharding);
  for (const Equation& eqn : program.eqns)
    for (const Program* sub : sub_programs(eqn.params)) collect_sharded(*sub, out);
}

struct CheckOptions {
  PluginOptions plugins;
  ProgramEditOptions edits;
  std::string file;
  std::string policy;
};

// Every problem at once on stdout (exit 2), or one line saying the program is fine. A program
// that reads is also linearized, which finds what reading cannot (an unknown policy in a
// checkpoint).
void run_check(const CheckOptions& o) {
  command_plugins(o.plugins);  // a --plugin that does not load is an error, not one of the program's problems
  const ProgramSource source = command_program_source(o.file);
  const ArgTypes arg_types = command_arg_types(o.edits);
  std::vector<std::string> problems = program_problems(source.text, source.name, arg_types);
  size_t equations = 0;
  std::vector<std::string> sharded;
  if (problems.empty()) {
    const Program read = parse_program(source.text, source.name, arg_types);
    equations = read.eqns.size();
    collect_sharded(read, sharded);
    try {
      const Program program = edited_program(read, o.edits);
      linearize(program, linearize_options(o.plugins, o.policy, program, o.edits));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      problems.push_back(e.what());
    }
  }
  for (const std::string& p : problems) std::cout << p << "\n";
  std::cout << std::flush;
  if (!problems.empty()) throw ExitCode{2};  // the problems are the output: nothing more to print
  std::cout << source.name << ": ok: " << equations << " top-level equation(s) read, verified and differentiated\n";
  if (!sharded.empty())
    std::cout << "note: " << sharded.size() << " value(s) carry JAX sharding annotations (" << sharded[0]
              << (sharded.size() > 1 ? ", ..." : "") << "); each is read and computed as the whole, unsharded array\n";
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "list every problem in FILE at once: unsupported primitives and dtypes, "
                                              "type errors, bad params");
  cmd->footer(
      "Reads FILE as 'residuals' would, but goes on past a bad equation (its outputs keep their declared\n"
      "types) and prints every problem, one line each as FILE:LINE:COL: message; a problem that recurs\n"
      "(an unsupported dtype, an unknown primitive) is printed once with the lines of the others. A program\n"
      "that reads is then differentiated, which finds problems such as an unknown policy. Exit code 0 when\n"
      "there is none, 2 when there are. FILE '-' is standard input; with no FILE, a program piped in.");
  cmd->add_option("FILE", options->file, "a program in jaxpr syntax; '-' reads standard input");
  cmd->add_option("--policy", options->policy, "also check the whole program checkpointed with this policy");
  add_program_edit_options(cmd, options->edits);
  add_plugin_option(cmd, options->plugins);
  cmd->callback([options]() { run_check(*options); });
}

}  // namespace rematkit::cli
