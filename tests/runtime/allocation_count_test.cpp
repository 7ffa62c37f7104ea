// Training steps allocate nothing once warm: every byte a step touches is in its arena (kernel
// workspaces included), so the predicted peak is all the memory a step uses. This executable
// replaces the allocator of the whole process (operator new and delete, and malloc, calloc,
// realloc, posix_memalign, aligned_alloc, memalign, valloc and pvalloc, forwarded to glibc's
// __libc_* functions) and counts, with atomics, every allocation any thread makes while steps run:
// the steps' own thread, oneTBB's workers and oneDNN's OpenMP threads alike. It also counts mmap
// calls: oneTBB takes its task objects from libtbbmalloc when that is installed, which gets its
// memory from mmap rather than malloc, so a pool that grew would show there.
//
// Backends: highway, and onednn in front of it when it is built. Not the reference backend: it is
// the slow oracle, computing each kernel in vectors of doubles it allocates on every call (see
// backends/reference/reference_backend.cpp), so a program must not fall back on it here; the plans
// list no reference, and planning fails if an equation needs one.
//
// Set REMATKIT_ALLOCATION_TRACE=1 to print a backtrace for each allocation counted.
//
// Built as its own executable (the replacement is process-wide) and never under a sanitizer, which
// owns malloc itself.
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>

#include "rematkit/flax/model_builder.hpp"
#include "rematkit/api/plan.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/schedule/step_program.hpp"
#include "rematkit/runtime/step_runner.hpp"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
}

namespace {

std::atomic<bool> counting{false};
std::atomic<bool> tracing{false};
std::atomic<uint64_t> allocations{0}, allocated_bytes{0}, mappings{0};
// Allocations made while oneDNN executes a primitive, on any thread (steps run one kernel at a
// time): see dnnl_primitive_execute below.
std::atomic<int> inside_onednn{0};
std::atomic<uint64_t> onednn_allocations{0}, onednn_bytes{0};
thread_local bool in_trace = false;  // a backtrace may allocate: not counted twice, never recursive

void trace(const char* what, size_t bytes) {
  if (!tracing.load(std::memory_order_relaxed) || in_trace) return;
  in_trace = true;
  char line[96];
  const int n = std::snprintf(line, sizeof line, "--- %s of %zu bytes on thread %ld\n", what, bytes,
                              static_cast<long>(syscall(SYS_gettid)));
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n));
  void* frames[32];
  backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  in_trace = false;
}

void note_allocation(size_t bytes) {
  if (!counting.load(std::memory_order_relaxed) || in_trace) return;
  const bool onednn = inside_onednn.load(std::memory_order_relaxed) > 0;
  (onednn ? onednn_allocations : allocations).fetch_add(1, std::memory_order_relaxed);
  (onednn ? onednn_bytes : allocated_bytes).fetch_add(bytes, std::memory_order_relaxed);
  trace(onednn ? "allocation inside oneDNN" : "allocation", bytes);
}

void* counted_malloc(size_t bytes) {
  note_allocation(bytes);
  return __libc_malloc(bytes);
}

void* counted_aligned(size_t alignment, size_t bytes) {
  note_allocation(bytes);
  return __libc_memalign(alignment, bytes);
}

}  // namespace

extern "C" {
void* malloc(size_t bytes) noexcept { return counted_malloc(bytes); }
void free(void* p) noexcept { __libc_free(p); }
void* calloc(size_t count, size_t size) noexcept {
  note_allocation(count * size);
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_realloc(p, bytes);
}
int posix_memalign(void** out, size_t alignment, size_t bytes) noexcept {
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = counted_aligned(alignment, bytes);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(size_t alignment, size_t bytes) noexcept { return counted_aligned(alignment, bytes); }
void* memalign(size_t alignment, size_t bytes) noexcept { return counted_aligned(alignment, bytes); }
void* valloc(size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_valloc(bytes);
}
void* pvalloc(size_t bytes) noexcept {
  note_allocation(bytes);
  return __libc_pvalloc(bytes);
}
// Fresh pages from the system, whoever asks (libtbbmalloc does; glibc's malloc calls its own mmap).
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  if (counting.load(std::memory_order_relaxed) && !in_trace) {
    mappings.fetch_add(1, std::memory_order_relaxed);
    trace("mmap", length);
  }
  return reinterpret_cast<void*>(syscall(SYS_mmap, addr, length, prot, flags, fd, offset));
}
void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) noexcept {
  return mmap(addr, length, prot, flags, fd, offset);
}

#ifdef REMATKIT_HAVE_ONEDNN
// oneDNN 2.6 allocates inside dnnl_primitive_execute on every call, whatever the caller does: the
// map of arguments it builds (std::unordered_map nodes and buckets), the std::function of each
// parallel_nd, its memory-storage wrappers. None of that is the plugin's to remove. The onednn
// plugin's call binds to this definition (exported from the executable, which comes first in the
// global scope), so the test tells those allocations apart from every other; it forwards to
// libdnnl's own, found once, during the warm-up.
int dnnl_primitive_execute(const void* primitive, const void* stream, int nargs, const void* args) {
  using Execute = int (*)(const void*, const void*, int, const void*);
  static const Execute real = [] {
    void* library = dlopen("libdnnl.so.2", RTLD_LAZY | RTLD_NOLOAD);
    return library ? reinterpret_cast<Execute>(dlsym(library, "dnnl_primitive_execute")) : nullptr;
  }();
  if (!real) std::abort();
  inside_onednn.fetch_add(1);
  const int status = real(primitive, stream, nargs, args);
  inside_onednn.fetch_sub(1);
  return status;
}
#endif
}

void* operator new(size_t bytes) {
  if (void* p = counted_malloc(bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t bytes) { return operator new(bytes); }
void* operator new(size_t bytes, const std::nothrow_t&) noexcept { return counted_malloc(bytes); }
void* operator new[](size_t bytes, const std::nothrow_t&) noexcept { return counted_malloc(bytes); }
void* operator new(size_t bytes, std::align_val_t alignment) {
  if (void* p = counted_aligned(static_cast<size_t>(alignment), bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t bytes, std::align_val_t alignment) { return operator new(bytes, alignment); }
void* operator new(size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return counted_aligned(static_cast<size_t>(alignment), bytes);
}
void* operator new[](size_t bytes, std::align_val_t alignment, const std::nothrow_t&) noexcept {
  return counted_aligned(static_cast<size_t>(alignment), bytes);
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }

namespace rematkit::testing {
namespace {

struct Counts {
  uint64_t allocations = 0, bytes = 0, mappings = 0;
  uint64_t onednn_allocations = 0, onednn_bytes = 0;  // inside dnnl_primitive_execute
};

template <typename Body>
Counts count_while(Body&& body) {
  for (auto* counter : {&allocations, &allocated_bytes, &mappings, &onednn_allocations, &onednn_bytes}) *counter = 0;
  counting = true;
  body();
  counting = false;
  return Counts{allocations.load(), allocated_bytes.load(), mappings.load(), onednn_allocations.load(),
                onednn_bytes.load()};
}

// Dense layers with a checkpoint each (so the backward pass recomputes): 1024 inputs into 600 is a
// weight of 2.4 MB, which the highway GEMM packs whole into its workspace; a product by 48 or 1
// column packs only its ragged last panel there; batch 32 makes the largest products parallel.
Model mlp() {
  ModelBuilder builder;
  builder.checkpoint("nothing_saveable", [](ModelBuilder& l) { l.dense(600).relu(); });
  builder.checkpoint("nothing_saveable", [](ModelBuilder& l) { l.dense(48).tanh(); });
  builder.dense(1);
  return builder.build(32, 1024, 7, Loss::kSum);
}

// A layer of 25 features: an odd width, so the GEMM packs a ragged panel into its workspace on
// every SIMD target.
void layer(ModelBuilder& l) { l.dense(25).tanh(); }

// nn.scan over four layers with a checkpoint inside the body: two loop steps, the forward scan
// (stacking each iteration's carry, the checkpoint's input) and its transpose (whose body computes
// the checkpoint's values again before their backward pass), each body in its own arena.
Model scanned() {
  ModelBuilder builder;
  builder.scan(4, [](ModelBuilder& body) { body.checkpoint("nothing_saveable", layer); });
  builder.dense(1);
  return builder.build(8, 25, 11, Loss::kSum);
}

// A checkpoint around the whole scan: three loop steps, the forward scan (keeping nothing of its
// body), the scan run again in the backward pass (now stacking what the transpose reads) and the
// transpose.
Model rematted_scan() {
  ModelBuilder builder;
  builder.checkpoint("nothing_saveable", [](ModelBuilder& whole) { whole.scan(4, layer); });
  builder.dense(1);
  return builder.build(8, 25, 13, Loss::kSum);
}

Model model_named(const std::string& name) {
  if (name == "mlp") return mlp();
  return name == "scan" ? scanned() : rematted_scan();
}

struct Case {
  const char* model;
  std::vector<std::string> backends;
  int threads;
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.model << " on " << c.backends.size() << " backend(s)"; }

std::string name_of(const ::testing::TestParamInfo<Case>& info) {
  std::string name = std::string(info.param.model) + "_on";
  for (const std::string& b : info.param.backends) name += "_" + b;
  return name + "_" + (info.param.threads ? std::to_string(info.param.threads) + "_thread" : std::string("all_cores"));
}

std::vector<Case> cases() {
  std::vector<std::vector<std::string>> backend_lists = {{"highway"}};
#ifdef REMATKIT_HAVE_ONEDNN
  backend_lists.push_back({"onednn", "highway"});
#endif
  std::vector<Case> all;
  for (const char* model : {"mlp", "scan", "rematted_scan"})
    for (const auto& backends : backend_lists)
      for (int threads : {1, 0}) all.push_back(Case{model, backends, threads});
  return all;
}

class AllocationCount : public ::testing::TestWithParam<Case> {};

TEST_P(AllocationCount, WarmTrainingStepsAllocateNothingAndReachThePredictedPeak) {
  const Case& c = GetParam();
  const Model model = model_named(c.model);
  PlanOptions options;
  options.backends.preference = c.backends;
  options.backends.threads = c.threads;
  const Plan plan(model.program, options);
  TrainingStep step = plan.training_step(model.arguments, model.params, 1e-3);

  // Every top-level kernel step runs on a listed backend, and each that asks for scratch (oneDNN's
  // GEMMs' packed panels where its kernel for this CPU packs) has it in the arena, so the predicted
  // peak below counts it. Which kernels ask depends on the CPU: with AVX-512 some do, on an AVX2
  // AMD EPYC none did.
  int loops = 0;
  for (const Step& s : step.runner().program().steps()) {
    if (s.kind == StepKind::kLoop) ++loops;
    if (s.kind != StepKind::kKernel) continue;
    EXPECT_NE(std::find(c.backends.begin(), c.backends.end(), s.kernel->backend()), c.backends.end());
    EXPECT_EQ(s.workspace >= 0, s.kernel->workspace_bytes() > 0);
    if (s.workspace >= 0) {
      EXPECT_GE(step.layout().buffers[static_cast<size_t>(s.workspace)].bytes,
                static_cast<int64_t>(s.kernel->workspace_bytes()));
    }
  }
  EXPECT_EQ(loops, std::string(c.model) == "mlp" ? 0 : std::string(c.model) == "scan" ? 2 : 3);

  const float first_loss = step.run();  // warm-up: thread pools, oneDNN's JIT, per-thread views
  tracing = std::getenv("REMATKIT_ALLOCATION_TRACE") != nullptr;
  float last_loss = first_loss;
  const Counts counts = count_while([&] {
    for (int i = 0; i < 5; ++i) last_loss = step.run();
  });
  tracing = false;
  EXPECT_EQ(counts.allocations, 0u) << counts.bytes << " bytes";
  EXPECT_EQ(counts.bytes, 0u);
  EXPECT_EQ(counts.mappings, 0u);
  // What oneDNN allocates inside its own execute (see dnnl_primitive_execute above): reported, not
  // asserted away; none without it.
  if (std::find(c.backends.begin(), c.backends.end(), "onednn") == c.backends.end()) {
    EXPECT_EQ(counts.onednn_allocations, 0u);
  } else {
    std::cout << "inside oneDNN's dnnl_primitive_execute: " << counts.onednn_allocations / 5 << " allocations, "
              << counts.onednn_bytes / 5 << " bytes per step\n";
  }
  EXPECT_EQ(step.measured_peak(), step.predicted_peak());
  EXPECT_NE(last_loss, first_loss);  // the steps did run and train
}

INSTANTIATE_TEST_SUITE_P(Models, AllocationCount, ::testing::ValuesIn(cases()), name_of);

// Keeps the compiler from leaving out an allocation whose memory is never used.
void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// The counter itself: an allocation in the window is seen, from any of the families.
TEST(AllocationCounter, SeesEachKindOfAllocation) {
  const Counts counts = count_while([] {
    void* a = std::malloc(10);
    keep(a);
    void* b = std::calloc(2, 8);
    keep(b);
    b = std::realloc(b, 32);
    keep(b);
    void* c = nullptr;
    EXPECT_EQ(posix_memalign(&c, 64, 24), 0);
    keep(c);
    void* d = std::aligned_alloc(64, 128);
    keep(d);
    auto* e = new std::string(100, 'x');  // the object and its characters
    keep(e);
    std::free(a);
    std::free(b);
    std::free(c);
    std::free(d);
    delete e;
  });
  EXPECT_EQ(counts.allocations, 7u);
  EXPECT_GE(counts.bytes, 10u + 16u + 32u + 24u + 128u + sizeof(std::string) + 101u);
}

}  // namespace
}  // namespace rematkit::testing
