// A chain of elementwise parts of a fused equation (rematkit/plugin/fusion_view.hpp), the iotas it
// reads and sums or maxima of its rows, run over one segment of the output shape at a time: each
// part's kernel from kernels.hpp runs on a few hundred elements that stay in L1, so the values
// between parts never go to memory. The same kernels as the parts run alone, element by element (a
// row at once for a reduction), so the results are the same bits. A large output's results are
// computed into segment buffers too and streamed out from there (stage_results). bf16 and f16
// values are promoted to f32 as they are read and each part's result is rounded to its dtype
// (half_precision.hpp), where JAX rounds each bf16 equation's result; f32 parts of a mixed chain
// are not rounded.
// SIMD-free.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "highway/half_precision.hpp"
#include "highway/kernels.hpp"
#include "highway/reference_lanes.hpp"
#include "rematkit/plugin/fusion_view.hpp"

namespace rematkit::hwy_backend {

class FusedElementwise {
 public:
  // The parts of `fusion` from `first` on, over `count` elements (a product's output when first is
  // 1: value num_inputs() is that product's result, read from the buffer `run` is given for it).
  // nullopt when a part or an operand's broadcast is one this backend does not run fused.
  static std::optional<FusedElementwise> of(const plugin::Fusion& fusion, size_t first);

  // Elements of a segment: 4 KiB of f32 per value, so a chain of a few values stays in L1 while the
  // calls per part stay few (a shorter segment measured slower: docs/performance.md).
  static constexpr size_t kSegment = 1024;
  // The most values (inputs and parts) a fused equation it runs may have: their buffers fit in an
  // array on the caller's stack.
  static constexpr size_t kMaxValues = 64;

  // Buffers: per fused-equation value, the input's data or the result's output buffer (null for a
  // value only the parts read). Runs elements [begin, end) of the output shape; begin a multiple of
  // alignment().
  void run(std::span<void* const> values, size_t begin, size_t end) const;
  size_t elements() const { return elements_; }
  // The elements of a row that reduction parts reduce (1 when there are none): a run covers whole
  // rows, so each row is summed in order, as reduce_rows sums it alone (the same bits).
  size_t alignment() const { return row_; }

 private:
  // kReference: every lane by the reference math (pow); kConvert: between bool or i32 and a float
  // value (op: a Conversion, fused_elementwise.cpp); kCompareInt: a comparison of i32 or u32 values
  // (op2 1 for u32); kIota: an iota of the output's shape, computed per segment; kRandomBits: a
  // key's 32-bit random_bits of the output's shape (dropout's), hashed per segment.
  enum class Kind {
    kUnary, kPow, kBinary, kBinary2, kCompare, kCompareInt, kSelect, kFill, kBitwise, kReduceRows, kReference, kConvert,
    kIota, kRandomBits
  };
  struct Part {
    Kind kind = Kind::kUnary;
    int op = 0;
    int64_t power = 0;
    int op2 = 0;                // kBinary2: two binary parts, op then op2, in one pass
    bool inner_left = true;     // kBinary2: op's result is op2's left operand (else its right)
    std::vector<int> operands;  // value numbers (kBinary2: op's two, then op2's other)
    size_t iota_run = 1, iota_size = 1;  // kIota: equal values in a run, and runs before the count restarts
    int carried = -1;  // kReduceRows over rows longer than a segment: its accumulator, Scratch::carried
    int value = 0;              // the value it defines
    int32_t dtype = RK_DTYPE_F32;  // its result's: a bf16 or f16 one is rounded to it
    // A bf16 or f16 part: which lanes are recomputed, and how (the operands in the primitive's order).
    HalfCheck check;
    // A bf16 or f16 binary part that is correctly rounded in f32 (kExact or kPicks): computed and
    // rounded in one pass (half_loops().binary_round), its lane operands its two operands.
    bool rounds_in_pass = false;
    // Such a part with an operand that is a bf16 or f16 input no other part reads, at i or scalar:
    // read as bits in its pass (half_loops().binary_round_bits), promoted only when a lane is
    // recomputed. Which of its two operands are.
    bool reads_bits = false;
    std::array<bool, 2> bits_operands{};
    // A bf16 or f16 part whose value a later part reads as f32 (else only its bits are stored).
    bool keeps_f32 = true;
    // A bf16 or f16 part that only moves values of its own dtype (select_n, a broadcast, a copy):
    // they are bf16 or f16 values already, so rounding leaves them as they are; only a result's bits
    // are stored.
    bool moves_half = false;
    bool result = false;  // whether its value is a result of the fused equation
    // A bf16 or f16 binary part run in one pass with the next, which alone reads it
    // (half_loops().binary2_round); each alone where a lane of the segment is a NaN.
    bool heads_pair = false;
    ReferenceLanes lanes;
    std::vector<int> lane_operands;
  };
  // How a value is read at flat element i of the output: at i, at 0, at i mod period (a bias
  // [1, F] beside [B, F]) or at i / period (one value per row: a layer norm's mean, spread by a
  // broadcast_in_dim part, or an operand of shape [B, S, 1] beside [B, S, D], spread into its
  // slot); slot >= 0 for a value that lives in a segment buffer: one
  // only the parts read, or a per-row operand spread there.
  // A repeated f32 operand with a short period has a tile (tile >= 0): its values repeated over a
  // segment and one period more (periods up to half a segment), so a segment reads it from any
  // start without stopping at a period.
  struct Access {
    enum class Mode { kFull, kScalar, kRepeat, kPerRow } mode = Mode::kFull;
    size_t period = 0;
    int slot = -1;
    int tile = -1;
    int same_as = -1;  // a bitcast's value: read where this value (its operand) is
    int staged = -1;   // a streamed result's segment buffer (stage_results)
    bool is_bool = false;
    int32_t dtype = RK_DTYPE_F32;  // bf16 or f16 values are held in slots or tiles as f32
  };
  // Slots: those an f32 chain would take too (values only the parts read, per-row operands) are at
  // most kMaxF32Slots, as before bf16 and f16 came, so f32 chains fuse as they did; the rest hold
  // promoted bf16 or f16 operands and bf16 or f16 results.
  static constexpr int kMaxSlots = 24, kMaxF32Slots = 16, kMaxTiles = 4, kMaxStaged = 4, kMaxLongRowReductions = 4;
  // A run's buffers on the caller's stack: the values only the parts read, and the tiles.
  struct Scratch {
    alignas(64) float slots[kMaxSlots][kSegment];
    alignas(64) float tiles[kMaxTiles][2 * kSegment];
    alignas(64) float rows[kSegment + 1];  // a bf16 or f16 per-row operand's rows, promoted
    alignas(64) float staged[kMaxStaged][kSegment];
    uint32_t flagged[kSegment];            // the lanes a bf16 or f16 part recomputes
    alignas(64) float carried[kMaxLongRowReductions][kMaxLaneFloats];  // long rows' lane accumulators
  };

  // Building one (of): part j of `fusion` added, or false when it is not fused here; reading a value
  // from before `first` (an input, or a product's result) over the output `shape`.
  bool add_part(const plugin::Fusion& fusion, size_t first, size_t j);
  bool read_operand(const plugin::Fusion& fusion, const std::vector<int64_t>& shape, int64_t v);
  // Which kernel runs a part: one of kernels.hpp's (kPart), none (kNoPass: a bitcast read where its
  // operand is), or none here (kDecline).
  enum class Fit { kDecline, kNoPass, kPart };
  Fit fit(const plugin::Fusion& fusion, size_t first, const plugin::FusedPart& p, Part& part);
  bool fit_fill(const plugin::Fusion& fusion, size_t first, const plugin::FusedPart& p, Part& part);
  Fit fit_bitcast(const plugin::Fusion& fusion, const plugin::FusedPart& p, Part& part);
  static bool fit_iota(const plugin::FusedPart& p, Part& part);
  bool fit_reduction(const plugin::Fusion& fusion, size_t first, const plugin::FusedPart& p, Part& part);
  bool fit_half(const plugin::Fusion& fusion, const plugin::FusedPart& p, Part& part);
  // A slot for a value, counted among those an f32 chain takes when `as_f32`; false when none is left.
  bool take_slot(bool as_f32, int& slot);
  void fit_lanes(const plugin::Fusion& fusion, const plugin::FusedPart& p, Part& part);

  void run_segment(std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const;
  // A kIota part's values at elements [begin, begin + len) of the output, into y.
  static void iota(const Part& p, size_t begin, size_t len, void* y);
  // A value's elements for a segment, and whether the kernels read it as a scalar.
  void* at(int v, bool& scalar, std::span<void* const> values, size_t begin, Scratch& scratch) const;
  // One part over a segment; a pair (Part::heads_pair) in one pass, false where a lane is a NaN
  // (then nothing it stored counts).
  void run_part(const Part& p, std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const;
  bool run_pair(const Part& p, const Part& q, std::span<void* const> values, size_t begin, size_t len,
                Scratch& scratch) const;
  // The bf16 or f16 operands promoted into their slots, and one value per row spread (from bf16 or
  // f16 rows promoted first), for a segment.
  void promote(std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const;
  void spread(const Access& a, const void* from, size_t begin, size_t len, float* y, Scratch& scratch) const;
  // A bf16 or f16 part's results at y rounded (its lanes recomputed), and stored when a result; a
  // kReference part's lanes computed.
  void finish(const Part& p, std::span<void* const> values, const LaneOperand* operands, void* y, size_t begin, size_t len,
             Scratch& scratch) const;
  // Binary parts in pairs where the second alone reads the first: one pass, one store fewer.
  void pair_binaries();
  // bf16 or f16 binary parts paired (Part::heads_pair); those read no operand as bits.
  void pair_halves();
  // The parts that read operands as bits (Part::reads_bits) chosen, those operands no longer
  // promoted at each segment's start.
  void read_bits();
  // Whether part `by` may read value v as bits: a bf16 or f16 input of its dtype, promoted at i or
  // as a scalar, that no other part reads.
  bool bits_eligible(int v, const Part& by) const;
  // The bf16 or f16 parts whose rounded f32 values no part reads (Part::keeps_f32 false).
  void drop_unread_f32();
  // Up to kMaxStaged 4-byte results of a large output computed into segment buffers, from which
  // each segment's values are streamed to the result's buffer once every part has run (stream32).
  void stage_results();
  void promote_value(int v, std::span<void* const> values, size_t begin, size_t len, Scratch& scratch) const;

  std::vector<Part> parts_;
  std::vector<Access> access_;  // per value
  size_t elements_ = 0;
  int num_slots_ = 0, f32_slots_ = 0;
  std::vector<size_t> periods_;  // of the kRepeat operands without a tile: segments never cross a multiple of one
  std::vector<int> tiled_;       // the values with a tile, in tile order
  std::vector<int> spread_;      // the per-row operands spread into their slots at each segment's start
  std::vector<int> promoted_;    // the bf16 or f16 operands promoted into their slots at each segment's start
  std::vector<int> streamed_;    // the staged results, in staged-buffer order
  size_t row_ = 1;               // the rows reduction parts reduce (kReduceRows), 1 without any
  int long_rows_ = 0;            // reduction parts over rows longer than a segment (Part::carried)
  std::vector<int64_t> reduced_;  // the values reduction parts define: results, which no part reads
};

}  // namespace rematkit::hwy_backend
