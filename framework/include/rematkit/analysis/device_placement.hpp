// One device's share of every value of a gradient step on a mesh: where a program says how its
// values are split (sharding_constraint, a type with its sharding, f32[8@x,4], a shard_map's
// specs), and where GSPMD's basic rules carry that to the operations in between (elementwise,
// broadcast, reshape of whole dims, transpose, reductions, dot_general's batch and free dims).
// A shard_map body's values are one device's already. What no rule reaches is counted whole on
// every device (replicated), and the summary says how much that is.
#pragma once

#include <cstdint>
#include <optional>

#include "rematkit/autodiff/linearize.hpp"
#include "rematkit/ir/mesh.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

struct PlacementSummary {
  Mesh mesh;
  int64_t split_values = 0;     // values split over the mesh (a block on each device)
  int64_t unplaced_values = 0;  // values no annotation reaches, counted whole on every device
  int64_t unplaced_bytes = 0;   // their bytes
};

// Sets Value::tiles for `lin`'s values on `mesh` (its loops' and branches' bodies are not placed:
// their values count whole). A bad-input error at the equation for a sharding over an axis the
// mesh lacks, or a dim its axes do not divide where JAX requires they do.
REMATKIT_CORE_EXPORT PlacementSummary place_on_mesh(Linearization& lin, const Mesh& mesh);

// The mesh `program` runs on or names: its shard_maps' or pmaps', else the first one its
// shardings print (NamedSharding(mesh=..), context_mesh=); nullopt if it names none.
REMATKIT_CORE_EXPORT std::optional<Mesh> program_mesh(const Program& program);

// Whether `program` says anything of shardings: a mesh, a sharding param, a sharded type.
REMATKIT_CORE_EXPORT bool program_is_sharded(const Program& program);

// --mesh checked against `program`: every axis must be one the program names (in a spec, a
// sharded type or a collective), and a mesh the program prints must have the same axes and sizes.
REMATKIT_CORE_EXPORT void check_mesh_option(const Mesh& mesh, const Program& program, const SourceLocation& where);

// The mesh a command or call counts one device's bytes on: `mesh_text` (--mesh data=2,fsdp=4,
// checked against the program), else the one the program runs on or names; nullopt with
// `whole_arrays` (--global) or none. `what` names the option in errors.
REMATKIT_CORE_EXPORT std::optional<Mesh> resolve_mesh(const Program& program, const std::string& mesh_text,
                                                      bool whole_arrays, const std::string& what);

// One line for a report: the mesh, and the bytes counted whole on every device.
REMATKIT_CORE_EXPORT std::string placement_line(const PlacementSummary& summary);

}  // namespace rematkit
