#include "kernel_timing.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/plugin_host/backend_kernel.hpp"

namespace rematkit::solver {
namespace {

// A zeroed buffer on a cache line, as the arena gives them.
struct AlignedBuffer {
  explicit AlignedBuffer(int64_t bytes)
      : size(static_cast<size_t>(aligned_bytes(std::max<int64_t>(bytes, 1)))),
        data(static_cast<std::byte*>(::operator new[](size, std::align_val_t{kBufferAlignment}))) {
    std::fill(data, data + size, std::byte{0});
  }
  ~AlignedBuffer() { ::operator delete[](data, std::align_val_t{kBufferAlignment}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  size_t size;
  std::byte* data;
};

}  // namespace

std::vector<double> time_kernels(const FlatGraph& graph, const std::vector<int>& eqns, const BackendOptions& backends) {
  BackendSet set(backends);
  std::vector<double> ns;
  for (int e : eqns) {
    const FlatEquation& eqn = graph.eqns[static_cast<size_t>(e)];
    if (is_collective(eqn.prim)) {  // no kernel: what it costs is the bytes it sends (BudgetOptions::comm_ns_per_byte)
      ns.push_back(0);
      continue;
    }
    const std::unique_ptr<PreparedKernel> kernel = set.bind(graph, eqn);
    std::vector<std::unique_ptr<AlignedBuffer>> buffers;
    std::vector<const void*> in;
    std::vector<void*> out;
    for (ValueId v : eqn.inputs) {
      buffers.push_back(std::make_unique<AlignedBuffer>(graph.values[static_cast<size_t>(v)].type.bytes()));
      in.push_back(buffers.back()->data);
    }
    for (ValueId v : eqn.outputs) {
      buffers.push_back(std::make_unique<AlignedBuffer>(graph.values[static_cast<size_t>(v)].type.bytes()));
      out.push_back(buffers.back()->data);
    }
    const AlignedBuffer workspace(static_cast<int64_t>(kernel->workspace_bytes()));
    std::byte* scratch = kernel->workspace_bytes() ? workspace.data : nullptr;
    kernel->execute(in, out, scratch, kernel->workspace_bytes());  // warm-up
    std::vector<double> runs;
    for (int r = 0; r < 3; ++r) {
      const auto start = std::chrono::steady_clock::now();
      kernel->execute(in, out, scratch, kernel->workspace_bytes());
      runs.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(runs.begin(), runs.end());
    ns.push_back(std::max(1.0, runs[1]));
  }
  return ns;
}

}  // namespace rematkit::solver
