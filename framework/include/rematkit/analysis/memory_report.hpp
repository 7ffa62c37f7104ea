// Where a training step's memory goes: every buffer of a step program with what it holds (its
// kind), its bytes, memory space, lifetime and the program line behind it; the bytes live at each
// step, per kind and per memory space; and the peak step with every buffer live there. Worked out
// from the plan alone, so it is known before anything runs; the live bytes are the arena layout's,
// so the report's peak is the layout's live peak.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rematkit/schedule/arena_layout.hpp"
#include "rematkit/ir/pass.hpp"
#include "rematkit/ir/byte_size.hpp"  // human_bytes
#include "rematkit/core_export.hpp"
#include "rematkit/ir/error.hpp"
#include "rematkit/autodiff/graph.hpp"
#include "rematkit/ir/types.hpp"

namespace rematkit {

class StepProgram;

// What a buffer holds, as far as memory goes. Every buffer has exactly one kind.
enum class BufferKind {
  kParameter,          // a differentiated argument
  kDataInput,          // an argument not differentiated, a constant or a literal
  kGradient,           // an argument's gradient: what the backward pass reads out
  kSavedResidual,      // a forward value kept on the device for the backward pass
  kOffloadedResidual,  // a forward value kept in pinned_host memory for the backward pass
  kRecomputed,         // a value the backward pass computes again (a checkpoint's recomputation)
  kCotangent,          // a value of the transposed equations, or an output's cotangent given to them
  kForwardTemporary,   // a forward value the backward pass does not keep (the outputs among them)
  kKernelWorkspace,    // a step's own scratch bytes (Step::workspace), alive for that step alone
};
constexpr size_t kNumBufferKinds = 9;
// "saved residual", and "saved_residual" as a key for JSON and CSV.
REMATKIT_CORE_EXPORT std::string_view buffer_kind_name(BufferKind kind);
REMATKIT_CORE_EXPORT std::string buffer_kind_key(BufferKind kind);

// "forward", "recompute", "backward".
REMATKIT_CORE_EXPORT std::string_view pass_name(Pass pass);

struct BufferMemory {
  BufferKind kind = BufferKind::kForwardTemporary;
  int64_t bytes = 0;  // as the arena holds it: rounded up to kBufferAlignment
  Type type;          // what it holds (u8[n] for a workspace)
  MemorySpace space = MemorySpace::kDevice;
  int first_step = 0, last_step = 0;  // alive from the start of the one to the end of the other
  ValueId value = kNoValue;           // the graph value it holds; kNoValue for a workspace
  // "argument w", "sin at FILE:LINE:COL", "gradient of argument w", "workspace of scan at ...".
  std::string source;
  SourceLocation where;  // the program equation behind it; empty for an input
  friend bool operator==(const BufferMemory&, const BufferMemory&) = default;
};

struct StepMemory {
  // The part of the training step it belongs to: a backward-pass step that runs a program
  // equation (not a transposed one) is the recomputation (kRecompute).
  Pass pass = Pass::kForward;
  std::string what;      // "sin at FILE:LINE:COL", "load argument x", "forward readout", ...
  SourceLocation where;  // the equation it runs; empty for a load or readout
  std::array<int64_t, kNumMemorySpaces> live_bytes{};  // bytes of the buffers alive at it, per space
  std::array<int64_t, kNumBufferKinds> device_bytes{};  // device bytes alive at it, per kind
  friend bool operator==(const StepMemory&, const StepMemory&) = default;
};

struct MemoryReport {
  std::vector<BufferMemory> buffers;  // one per buffer of the layout, in its order
  std::vector<StepMemory> steps;      // one per step of the program
  int peak_step = -1;                 // the first step with the most device bytes alive (-1: no steps)
  std::vector<int> peak_buffers;      // the device buffers alive there, largest first, then in order
  std::array<int64_t, kNumBufferKinds> peak_bytes{};  // their bytes per kind
  // Per memory space: the arena's size (the predicted peak, which a run measures) and the most bytes
  // alive at one step (the live peak). The arena can be larger: the gap is fragmentation.
  std::array<int64_t, kNumMemorySpaces> predicted_peak{}, live_peak{};

  int64_t peak_bytes_of(BufferKind kind) const { return peak_bytes[static_cast<size_t>(kind)]; }
  friend bool operator==(const MemoryReport&, const MemoryReport&) = default;
};

// The report of a program's forward and backward pass (or forward pass alone).
REMATKIT_CORE_EXPORT MemoryReport build_memory_report(const StepProgram& program);

// What `rematkit memory` prints: the peak step and what it runs, every buffer alive there, the bytes
// per kind, and the predicted against the live peak.
REMATKIT_CORE_EXPORT std::string format_memory_report(const MemoryReport& report);

}  // namespace rematkit
