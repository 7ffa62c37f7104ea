// rematkit: gradient-checkpointing (rematerialization) policies, the JAX way, in C++.
// Errors are one line on stderr; exit code 2 for bad input, 1 for an internal failure.
#include <algorithm>
#include <iostream>

#include "commands.hpp"
#include "rematkit/ir/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"rematkit: what a checkpoint policy saves for the backward pass, and the gradients, for programs "
               "in jaxpr syntax.",
               "rematkit"};
  app.require_subcommand(1);
  app.footer(
      "Programs are one jaxpr each, written as jax.make_jaxpr prints them (see docs/program-format.md).\n"
      "Policies (--policy, or policy= in a checkpoint): everything_saveable, nothing_saveable, dots_saveable,\n"
      "dots_with_no_batch_dims_saveable, save_only_these_names('a', ...), save_any_names_but_these(...),\n"
      "save_anything_except_these_names(...), save_from_both_policies(p1, p2),\n"
      "offload_dot_with_no_batch_dims('device', 'pinned_host'), save_and_offload_only_these_names(\n"
      "names_which_can_be_saved=(...), names_which_can_be_offloaded=(...), offload_src='device',\n"
      "offload_dst='pinned_host'), and the aliases and class reprs JAX prints.\n"
      "Errors: one line on stderr naming the problem and FILE:LINE:COL; exit code 2 for bad input, 1 for an\n"
      "internal failure. Run 'rematkit COMMAND --help' for each command.");
  app.set_version_flag("--version", std::string("rematkit ") + REMATKIT_VERSION);
  rematkit::cli::add_residuals_command(app);
  rematkit::cli::add_check_command(app);
  rematkit::cli::add_grad_command(app);
  rematkit::cli::add_memory_command(app);
  rematkit::cli::add_compare_command(app);
  rematkit::cli::add_mlp_command(app);
  rematkit::cli::add_plugins_command(app);
  rematkit::cli::add_sweep_command(app);
  rematkit::cli::add_sweep_merge_command(app);
  rematkit::cli::add_solve_command(app);
  rematkit::cli::add_program_command(app);
  // CLI11 would only say a subcommand is required; name the word it did not know.
  const std::string first = argc > 1 ? argv[1] : "";
  const auto commands = app.get_subcommands([](const CLI::App*) { return true; });
  const bool known = std::any_of(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == first; });
  if (!first.empty() && first[0] != '-' && !known) {
    std::string names;
    for (const CLI::App* c : commands) names += (names.empty() ? "" : ", ") + c->get_name();
    std::cerr << "rematkit: unknown command '" << argv[1] << "' (commands: " << names << "; see rematkit --help)\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const rematkit::cli::ExitCode& e) {
    return e.code;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "rematkit: " << e.what() << " (see rematkit --help)\n";
    return 2;
  } catch (const rematkit::Error& e) {
    std::cerr << "rematkit: " << e.what() << "\n";
    return e.kind() == rematkit::ErrorKind::kBadInput ? 2 : 1;
  } catch (const std::exception& e) {
    std::cerr << "rematkit: internal error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
