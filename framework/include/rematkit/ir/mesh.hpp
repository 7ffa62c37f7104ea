// Device meshes and what a program says about them: the mesh a shard_map or pmap runs its body
// on, each operand's and result's split over its axes, and the axes a collective works over
// (jax/_src/mesh.py, jax/_src/shard_map.py, jax/_src/lax/parallel.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/ir/program.hpp"

namespace rematkit {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
  friend bool operator==(const MeshAxis&, const MeshAxis&) = default;
};

// Axes in the order the mesh names them; a device's id is its coordinates read row-major.
struct REMATKIT_CORE_EXPORT Mesh {
  std::vector<MeshAxis> axes;

  int64_t num_devices() const;
  // The axis named `name`'s position, or -1.
  int index_of(std::string_view name) const;
  // "x=2,y=4", as --mesh takes it.
  std::string str() const;
  friend bool operator==(const Mesh&, const Mesh&) = default;
};

// Each dim's mesh axes (none: the dim is whole on every device).
using DimAxes = std::vector<std::vector<std::string>>;

// The mesh printed as a shard_map's mesh= or a sharding's mesh: Mesh('x': 2, 'y': 4, ...),
// AbstractMesh('x': 2, ...), AbstractMesh((('x', 2),)), Mesh(device_ids=array([[0, 1]]),
// axis_names=('x', 'y')), {'x': 4}. A bad-input error at `where` otherwise.
REMATKIT_CORE_EXPORT Mesh read_mesh(std::string_view printed, const SourceLocation& where);

// --mesh data=2,fsdp=4.
REMATKIT_CORE_EXPORT Mesh parse_mesh_option(std::string_view text, const SourceLocation& where);

// The mesh a shard_map or xla_pmap equation runs its body on (xla_pmap: one axis, axis_name).
REMATKIT_CORE_EXPORT Mesh mapped_call_mesh(const Equation& eqn);

// Per operand (results == false) or result of a shard_map or xla_pmap equation: each dim's mesh
// axes, from in_specs/out_specs (PartitionSpec('x', None)), in_names/out_names ({0: ('x',)}),
// or in_axes/out_axes (pmap: the mapped dim, which the body does not have).
struct MappedValue {
  DimAxes dims;     // of the whole value
  int squeezed = -1;  // pmap: the dim of size axis_size the body's value lacks
};
REMATKIT_CORE_EXPORT std::vector<MappedValue> mapped_call_values(const Equation& eqn, bool results, size_t count);

// A value's type on one device from its whole type (`to_device`: each dim divided by its mesh
// axes, as shard_map.py's _shard_aval, pmap's mapped dim dropped) or back (_unshard_aval). A
// bad-input error at `where`, naming `what`, where the axes do not divide a dim.
REMATKIT_CORE_EXPORT Type mapped_value_type(const Type& whole, const MappedValue& v, const Mesh& mesh, bool to_device,
                                            const SourceLocation& where, const std::string& what);

// shard_map_in's and shard_map_out's params for a value split over `mesh` as `v` says (pmap's
// squeezed dim aside: a reshape).
REMATKIT_CORE_EXPORT Params mapped_value_params(const MappedValue& v, const Mesh& mesh, const SourceLocation& where);

// Each dim's number of blocks under a printed sharding, for a value of `rank` dims: a
// NamedSharding (its own mesh), a GSPMDSharding or OpShardingSharding (XLA's tile assignment,
// {devices=[4,1,2]<=[8] last_tile_dim_replicate}), a PositionalSharding (shape=), or a
// PartitionSpec over `mesh`. nullopt for a sharding that places nothing (UnspecifiedValue,
// SingleDeviceSharding, replicated). A bad-input error at `where` for an axis the mesh lacks.
REMATKIT_CORE_EXPORT std::optional<std::vector<int64_t>> sharding_tiles(std::string_view printed, int rank,
                                                                        const Mesh* mesh, const SourceLocation& where);

// The mesh a printed sharding or context mesh names (NamedSharding(mesh=..), Mesh(..),
// AbstractMesh(..)), if it names one.
REMATKIT_CORE_EXPORT std::optional<Mesh> printed_mesh(std::string_view printed, const SourceLocation& where);

// A collective's mesh axes, from axes= or axis_name= (x, 'x', ('x', 'y')).
REMATKIT_CORE_EXPORT std::vector<std::string> collective_axes(const Params& params, const SourceLocation& where);

// The devices that share `device`'s place on every axis but `axes`, in the order of their index
// over `axes` (the first axis named the slowest, as axis_index counts), and `device`'s own index
// among them: the group a collective over `axes` works in.
struct MeshGroup {
  std::vector<int64_t> members;
  int64_t rank = 0;
};
REMATKIT_CORE_EXPORT MeshGroup mesh_group(const Mesh& mesh, int64_t device, const std::vector<std::string>& axes);

// The product of the sizes of `axes` on `mesh`; a bad-input error at `where` for an axis the
// mesh does not have.
REMATKIT_CORE_EXPORT int64_t axes_size(const Mesh& mesh, const std::vector<std::string>& axes,
                                       const SourceLocation& where);

}  // namespace rematkit
