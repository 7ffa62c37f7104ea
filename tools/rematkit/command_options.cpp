#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "commands.hpp"
#include "rematkit/ir/byte_size.hpp"
#include "rematkit/io/program_file.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/program_edits.hpp"

namespace rematkit::cli {

ProgramSource command_program_source(const std::string& file) {
  if (!file.empty()) return {read_program_text(file), program_source_name(file)};
  if (!isatty(STDIN_FILENO)) {
    std::string piped = read_program_text("-");
    const bool blank = std::all_of(piped.begin(), piped.end(), [](unsigned char c) { return std::isspace(c); });
    if (!blank) return {std::move(piped), program_source_name("-")};
  }
  return {builtin_example_program(), kBuiltinExampleName};
}

Program command_program(const std::string& file, const ProgramEditOptions& edits) {
  const ProgramSource source = command_program_source(file);
  return parse_program(source.text, source.name, command_arg_types(edits));
}

ArgTypes command_arg_types(const ProgramEditOptions& edits) {
  return edits.arg_types.empty() ? ArgTypes{} : parse_arg_types(edits.arg_types, "--arg-types");
}

void add_plugin_option(CLI::App* cmd, PluginOptions& options) {
  cmd->add_option("--plugin", options.files,
                  "a plugin library to load first (repeatable); REMATKIT_PLUGIN_PATH adds folders to search");
}

const PluginRegistry& command_plugins(const PluginOptions& options) {
  static std::optional<PluginRegistry> registry;
  if (!registry) {
    PluginRegistry loaded;
    loaded.discover(options.files);
    registry = std::move(loaded);
  }
  return *registry;
}

void add_backend_option(CLI::App* cmd, BackendChoice& backends) {
  cmd->add_option("--backend", backends.names,
                  "backends to run on, in order of preference: an equation runs on the first that supports it "
                  "(default: the fastest installed of onednn,highway,reference; rematkit plugins lists them)")
      ->delimiter(',');
  cmd->add_option("--backend-option", backends.options,
                  "BACKEND.NAME=VALUE: an option of a listed backend's own, such as onednn.weights_layout=as_it_lies "
                  "(repeatable; docs/backends.md has each backend's)");
}

BackendOptions BackendChoice::backend_options(const PluginRegistry& plugins) const {
  BackendOptions options{names, &plugins};
  for (const std::string& text : this->options) options.backend_options.push_back(parse_backend_option(text));
  return options;
}

void add_fusion_option(CLI::App* cmd, bool& no_fusion) {
  cmd->add_flag("--no-fusion", no_fusion,
                "run every equation as a kernel of its own, where a backend would run a product with its bias and\n"
                "activation, or a chain of elementwise ops, as one (the results are the same)");
}

void add_memory_limit_option(CLI::App* cmd, std::string& text) {
  cmd->add_option("--max-memory", text,
                  "the most memory a step may take, such as 8GiB: a step predicted to need more is refused before "
                  "it allocates (default: the machine's available memory)");
}

std::optional<int64_t> memory_limit(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const std::optional<ByteSize> size = parse_byte_size(text);
  if (!size || size->bytes < 1 || size->bytes > 9.2e18)
    fail("--max-memory: '" + text + "' is not a size in bytes (such as 8GiB, 512MiB or 1e9)");
  return static_cast<int64_t>(size->bytes);
}

void add_program_edit_options(CLI::App* cmd, ProgramEditOptions& options) {
  cmd->add_option("--wrt", options.wrt,
                  "differentiate only these arguments, by name or index (as jax.grad's argnums); default: every "
                  "floating or complex argument")
      ->delimiter(',');
  cmd->add_option("--retarget-policy", options.retarget_policy,
                  "replace the policy of every checkpoint in the program by this one, keeping where they are");
  cmd->add_option("--arg-types", options.arg_types,
                  "types of the arguments a program printed by JAX before 0.2.22 gives without one, such as "
                  "a:f32[3],b:i32[]");
}

Program edited_program(Program program, const ProgramEditOptions& edits) {
  if (edits.retarget_policy.empty()) return program;
  return retarget_checkpoint_policies(program, edits.retarget_policy, "--retarget-policy");
}

LinearizeOptions linearize_options(const PluginOptions& plugins, const std::string& policy, const Program& program,
                                   const ProgramEditOptions& edits) {
  LinearizeOptions options;
  options.policies = &command_plugins(plugins).policies();
  options.policy = policy;
  if (!edits.wrt.empty()) options.differentiate = argument_indices(program, edits.wrt, "--wrt");
  return options;
}

// This process's rank when a launcher (mpirun, Slurm's PMI) started it among two or more ranks,
// read from its environment before MPI is initialized; nullopt otherwise.
std::optional<int> launched_rank() {
  for (const auto& [size_name, rank_name] : {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                             std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const char* size = std::getenv(size_name);
    const char* rank = std::getenv(rank_name);
    if (size && rank && std::atoi(size) > 1) return std::atoi(rank);
  }
  return std::nullopt;
}

void add_rank_timeout_option(CLI::App* cmd, double& seconds) {
  cmd->add_option("--rank-timeout", seconds,
                  "under mpirun: seconds a rank waits at a collective for the others before it ends the job\n"
                  "(a rank that stopped or hangs), exit status 2")
      ->check(CLI::PositiveNumber);
}

}  // namespace rematkit::cli
