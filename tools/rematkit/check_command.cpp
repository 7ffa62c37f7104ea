#include <iostream>

#include "commands.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/parser.hpp"

namespace rematkit::cli {
namespace {

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
  std::vector<std::string> notes;
  if (problems.empty()) {
    const Program read = parse_program(source.text, source.name, arg_types);
    equations = read.eqns.size();
    notes = program_notes(read);
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
  for (const std::string& note : notes) std::cout << note << "\n";
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
