// A gradient step on a mesh, one step program per device: each device runs the step of its own
// blocks (the linearization placed on the mesh: analysis/device_placement.hpp) in an arena of its
// own, so its measured peak is the per-device peak the memory plan predicts, and its collectives
// go to the other devices through a MeshTransport: the simulated mesh's threads, or MPI's ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "rematkit/core_export.hpp"
#include "rematkit/interpreter/mesh_transport.hpp"
#include "rematkit/runtime/step_runner.hpp"

namespace rematkit {

class REMATKIT_CORE_EXPORT MeshStepRunner : public StepRunner {
 public:
  // `lin` placed on `mesh` (place_on_mesh) and outliving the runner. A bad-input error as
  // OneShotRunner's, and a MemoryLimitError when one device's predicted peak is over the limit.
  MeshStepRunner(const Linearization& lin, const Mesh& mesh, const BackendOptions& backends);

  const Mesh& mesh() const { return mesh_; }

  // One device's part of a run, which every device of the mesh makes at once through `transport`:
  // it takes its blocks of the whole `constants` and `arguments`, runs its step, and joins the
  // outputs and gradients from every device's blocks, so each device returns the whole values
  // (cotangents of ones, as OneShotRunner). A value split outside a shard_map by GSPMD's rules
  // alone is refused: XLA's implicit collectives for it are not run here.
  GradientResult run(MeshTransport& transport, const std::vector<Tensor>& constants,
                     const std::vector<Tensor>& arguments);

 private:
  Mesh mesh_;
};

// Device `device`'s block of the whole value of `v`, an argument or constant of `lin` (placed on
// `mesh`): as the shard_map that reads it splits it, or the whole value where it is not split. A
// bad-input error, naming `what` and `index`, for a value split by GSPMD's rules alone.
REMATKIT_CORE_EXPORT Tensor device_block_of(const Linearization& lin, ValueId v, const Mesh& mesh, int64_t device,
                                            const Tensor& whole, const char* what, size_t index);

// Every device of `mesh` in this process, a MeshStepRunner each (planned once, kept between runs),
// a run a thread each, the collectives meeting at the simulated mesh (simulated_mesh.hpp).
// `backends.threads` is per device (0: one thread each). `lin` placed on `mesh`, outliving it.
class REMATKIT_CORE_EXPORT SimulatedDevices {
 public:
  SimulatedDevices(const Linearization& lin, const Mesh& mesh, const BackendOptions& backends);
  ~SimulatedDevices();
  SimulatedDevices(SimulatedDevices&&) noexcept;
  SimulatedDevices& operator=(SimulatedDevices&&) noexcept;

  // The whole outputs and gradients, as MeshStepRunner::run gives each device.
  GradientResult run(const std::vector<Tensor>& constants, const std::vector<Tensor>& arguments);
  const MeshStepRunner& device(int64_t d) const { return *devices_.at(static_cast<size_t>(d)); }
  int64_t devices() const { return static_cast<int64_t>(devices_.size()); }
  // The highest any device's arena reached in the last run.
  int64_t measured_peak(MemorySpace space = MemorySpace::kDevice) const;

 private:
  Mesh mesh_;
  std::vector<std::unique_ptr<MeshStepRunner>> devices_;
};

// One run of SimulatedDevices, and each device's measured peak.
struct MeshRun {
  GradientResult result;                 // the whole outputs and gradients (every device's are the same)
  int64_t predicted_peak = 0;            // one device's arena, as planned
  std::vector<int64_t> measured_peaks;   // each device's arena high-water mark, by device id
};
REMATKIT_CORE_EXPORT MeshRun run_on_simulated_devices(const Linearization& lin, const Mesh& mesh,
                                                      const BackendOptions& backends,
                                                      const std::vector<Tensor>& constants,
                                                      const std::vector<Tensor>& arguments);

}  // namespace rematkit
