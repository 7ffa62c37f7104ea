// The rematkit subcommands. Each registers its options on the CLI11 app and runs when chosen.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/plugin_host/backend_options.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"

namespace rematkit::cli {

// The program `rematkit residuals` reports on when given no FILE (examples/two_layer.jaxpr).
const char* builtin_example_program();
constexpr const char* kBuiltinExampleName = "<builtin example>";

// Thrown by a command that has printed all it has to say and exits with `code`.
struct ExitCode {
  int code;
};

// The program a command reads: FILE, or standard input for "-". With no FILE, standard input when
// a program is piped in, else the built-in example.
struct ProgramSource {
  std::string text;
  std::string name;  // for messages: the path, "<stdin>" or kBuiltinExampleName
};
ProgramSource command_program_source(const std::string& file);
struct ProgramEditOptions;
// The program read with --arg-types (when `edits` has it).
rematkit::Program command_program(const std::string& file, const ProgramEditOptions& edits);

// Notes on what a program read as JAX printed it is computed as (program_notes.cpp): remat3
// function policies JAX never calls (each at its checkpoint's FILE:LINE:COL), sharding annotations.
// `per_device`: the command counts one device's bytes, so sharded values are no longer whole.
std::vector<std::string> program_notes(const rematkit::Program& program, bool per_device = false);

// --plugin FILE (repeatable): plugin libraries a command loads before the ones found by default.
struct PluginOptions {
  std::vector<std::string> files;
};
void add_plugin_option(CLI::App* cmd, PluginOptions& options);
// The plugins of this run: the --plugin files, then default discovery. Loaded once.
const rematkit::PluginRegistry& command_plugins(const PluginOptions& options);

// --backend NAME[,NAME...]: the backends to run on, in order of preference (default: the fastest
// installed, as the API's: onednn, highway, reference); --backend-option BACKEND.NAME=VALUE
// (repeatable): an option of a listed backend's own (rematkit::parse_backend_option).
struct BackendChoice {
  std::vector<std::string> names;    // empty: the fastest installed
  std::vector<std::string> options;  // BACKEND.NAME=VALUE each
  // Them as the API takes them, the backends coming from `plugins`.
  rematkit::BackendOptions backend_options(const rematkit::PluginRegistry& plugins) const;
};
void add_backend_option(CLI::App* cmd, BackendChoice& backends);
// --no-fusion: BackendOptions::fuse off.
void add_fusion_option(CLI::App* cmd, bool& no_fusion);

// --max-memory SIZE (8GiB, 512MiB, 1e9): the most bytes a step may take; a step predicted to
// need more is refused before it allocates. Empty text: nullopt, the machine's available memory.
void add_memory_limit_option(CLI::App* cmd, std::string& text);
std::optional<int64_t> memory_limit(const std::string& text);

// --wrt NAMES|INDICES (differentiate only those arguments, as jax.grad's argnums),
// --retarget-policy SPEC (another policy for every checkpoint the program has) and --arg-types
// a:f32[3],b:i32[] (the types of binders JAX before 0.2.22 printed without one).
struct ProgramEditOptions {
  std::vector<std::string> wrt;
  std::string retarget_policy;
  std::string arg_types;
};
void add_program_edit_options(CLI::App* cmd, ProgramEditOptions& options);
// --arg-types parsed (empty without it); a bad one is bad input at --arg-types:1:COL.
rematkit::ArgTypes command_arg_types(const ProgramEditOptions& edits);
// `program` with --retarget-policy applied.
rematkit::Program edited_program(rematkit::Program program, const ProgramEditOptions& edits);

// How a command linearizes: with the run's plugins' policies, --policy (when given) around the
// whole program, and --wrt's arguments (all floating ones without it).
rematkit::LinearizeOptions linearize_options(const PluginOptions& plugins, const std::string& policy,
                                             const rematkit::Program& program = {},
                                             const ProgramEditOptions& edits = {});

// --mesh NAME=SIZE,... and --global (mesh_options.cpp).
struct MeshOptions {
  std::string mesh;
  bool global = false;
};
void add_mesh_options(CLI::App* cmd, MeshOptions& options);
// Places `lin`'s values on `mesh` (command_mesh's), so that its reports count one device's bytes;
// returns the line that says so ("" when there is no mesh, as with --global).
std::string place_for_command(rematkit::Linearization& lin, const std::optional<rematkit::Mesh>& mesh);
// The mesh of --mesh (checked against the program), else the one the program runs on or names;
// nullopt with --global or none.
std::optional<rematkit::Mesh> command_mesh(const rematkit::Program& program, const MeshOptions& options);

// This process's rank when a launcher (mpirun, Slurm's PMI) started it among two or more ranks,
// read from its environment before MPI is initialized; nullopt otherwise.
std::optional<int> launched_rank();
// --rank-timeout SECONDS: under mpirun, how long a rank waits at a collective before it ends the job.
void add_rank_timeout_option(CLI::App* cmd, double& seconds);

void add_residuals_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_grad_command(CLI::App& app);
void add_memory_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_mlp_command(CLI::App& app);
void add_plugins_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_sweep_merge_command(CLI::App& app);
void add_solve_command(CLI::App& app);
void add_program_command(CLI::App& app);

}  // namespace rematkit::cli
