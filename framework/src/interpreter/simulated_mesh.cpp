#include "rematkit/interpreter/simulated_mesh.hpp"

#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "rematkit/interpreter/device_collective.hpp"

namespace rematkit {
namespace {

// Where every device hands in what it gives to an exchange and waits for the others: the devices
// of a mesh make the same exchanges in the same order (the program is SPMD), so the n-th call of
// each meets the n-th call of the others.
class Rendezvous {
 public:
  explicit Rendezvous(int64_t devices) : given_(static_cast<size_t>(devices)), what_(static_cast<size_t>(devices)) {}

  // Hands in `given` for the exchange named `what` and waits until every device has, then runs
  // `take` on all devices' given bytes (by device id); returns once every device has taken what it
  // needs, so no device overwrites what another still reads.
  void meet(int64_t device, const std::string& what, const void* given,
            const std::function<void(const std::vector<const std::byte*>&)>& take) {
    std::unique_lock lock(mutex_);
    const uint64_t round = round_;
    given_[static_cast<size_t>(device)] = static_cast<const std::byte*>(given);
    what_[static_cast<size_t>(device)] = what;
    if (++arrived_ == given_.size()) {
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round || failed_; });
      if (round_ == round) fail_mesh();
    }
    for (size_t d = 0; d < what_.size(); ++d)
      if (what_[d] != what)
        fail("the devices of the mesh disagree: device " + std::to_string(device) + " runs " + what + " where device " +
             std::to_string(d) + " runs " + what_[d]);
    lock.unlock();
    take(given_);
    lock.lock();
    const uint64_t taken_round = round_;
    if (++taken_ == given_.size()) {
      taken_ = 0;
      ++taken_rounds_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return taken_rounds_ >= taken_round || failed_; });
      if (taken_rounds_ < taken_round) fail_mesh();
    }
  }

  // A device failed or left: every device waiting, now or later, stops.
  void abandon(const std::string& why) {
    std::lock_guard lock(mutex_);
    if (!failed_) reason_ = why;
    failed_ = true;
    changed_.notify_all();
  }

 private:
  [[noreturn]] void fail_mesh() const { fail("stopped at a collective: " + reason_); }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<const std::byte*> given_;
  std::vector<std::string> what_;
  size_t arrived_ = 0, taken_ = 0;
  uint64_t round_ = 0, taken_rounds_ = 0;
  bool failed_ = false;
  std::string reason_;
};

// One device's exchanges, as memory copies from the other devices' buffers at the rendezvous.
class SimulatedTransport final : public MeshTransport {
 public:
  SimulatedTransport(const Mesh& mesh, int64_t device, Rendezvous& rendezvous)
      : mesh_(mesh), device_(device), rendezvous_(rendezvous) {}

  const Mesh& mesh() const override { return mesh_; }
  int64_t device() const override { return device_; }

  void all_gather(const std::string& what, const std::vector<int64_t>& group, const void* given, size_t bytes,
                  void* received) override {
    rendezvous_.meet(device_, what, given, [&](const std::vector<const std::byte*>& all) {
      for (size_t k = 0; k < group.size(); ++k)
        std::memcpy(static_cast<std::byte*>(received) + k * bytes, all[static_cast<size_t>(group[k])], bytes);
    });
  }

  void all_to_all(const std::string& what, const std::vector<int64_t>& group, const void* given, size_t chunk,
                  void* received) override {
    size_t rank = 0;
    while (rank < group.size() && group[rank] != device_) ++rank;
    rendezvous_.meet(device_, what, given, [&](const std::vector<const std::byte*>& all) {
      for (size_t k = 0; k < group.size(); ++k)
        std::memcpy(static_cast<std::byte*>(received) + k * chunk, all[static_cast<size_t>(group[k])] + rank * chunk, chunk);
    });
  }

  void permute(const std::string& what, int64_t /*to*/, const void* given, int64_t from, void* received,
               size_t bytes) override {
    rendezvous_.meet(device_, what, given, [&](const std::vector<const std::byte*>& all) {
      if (from >= 0) std::memcpy(received, all[static_cast<size_t>(from)], bytes);
    });
  }

 private:
  const Mesh& mesh_;
  int64_t device_;
  Rendezvous& rendezvous_;
};

thread_local SimulatedTransport* place = nullptr;

}  // namespace

void run_on_simulated_mesh(const Mesh& mesh, const std::function<void(int64_t)>& device_code) {
  if (place) fail("a shard_map or pmap inside one is not supported: rematkit runs one mesh level");
  const int64_t n = mesh.num_devices();
  if (n > 4096) fail("a simulated mesh of " + std::to_string(n) + " devices is past what one process runs (4096)");
  Rendezvous rendezvous(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < n; ++d) {
    threads.emplace_back([&, d] {
      SimulatedTransport transport(mesh, d, rendezvous);
      place = &transport;
      try {
        device_code(d);
        // A device done while others still wait at a collective has skipped it: they stop.
        rendezvous.abandon("device " + std::to_string(d) + " finished without it");
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(d)] = std::current_exception();
        rendezvous.abandon("device " + std::to_string(d) + " failed: " + e.what());
      }
      place = nullptr;
    });
  }
  for (std::thread& t : threads) t.join();
  // The first device's own error, not the others' stopping at a collective after it.
  for (const std::exception_ptr& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Error& err) {
      if (std::string(err.what()).rfind("stopped at a collective", 0) == 0) continue;
      throw;
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

bool on_simulated_mesh() { return place != nullptr; }

MeshTransport& simulated_transport() {
  if (!place) internal_error("simulated_transport() off a simulated mesh");
  return *place;
}

Tensor run_collective(Prim prim, const Params& params, const std::vector<const Tensor*>& in, const Type& out_type,
                      Arithmetic arithmetic) {
  if (!place)
    fail(std::string(prim_name(prim)) + " moves values between the devices of a mesh: it runs inside a shard_map or pmap");
  return run_device_collective(*place, prim, params, in.empty() ? nullptr : in[0], out_type, arithmetic);
}

}  // namespace rematkit
