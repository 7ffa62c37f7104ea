// --mesh and --global: the commands that report bytes (residuals, memory) say one device's, on
// the mesh --mesh gives or the program names, unless --global asks for whole arrays.
#include "commands.hpp"
#include "rematkit/analysis/device_placement.hpp"

namespace rematkit::cli {

void add_mesh_options(CLI::App* cmd, MeshOptions& options) {
  cmd->add_option("--mesh", options.mesh,
                  "the device mesh, such as data=2,fsdp=4: bytes are one device's, each value split as the program's "
                  "shardings say (default: the mesh the program names, if any)");
  cmd->add_flag("--global", options.global, "count whole arrays, as on one device, whatever the program's shardings");
}

std::optional<Mesh> command_mesh(const Program& program, const MeshOptions& options) {
  if (options.global && !options.mesh.empty()) fail("--global and --mesh: choose one (--global counts whole arrays)");
  return resolve_mesh(program, options.mesh, options.global, "--mesh");
}

std::string place_for_command(Linearization& lin, const std::optional<Mesh>& mesh) {
  if (!mesh) return "";
  return placement_line(place_on_mesh(lin, *mesh));
}

}  // namespace rematkit::cli
