#include "rematkit/interpreter/simulated_mesh.hpp"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "collectives.hpp"

namespace rematkit {
namespace {

// Where every device hands in its operand for a collective and waits for the others: the devices
// of a mesh call the same collectives in the same order (the program is SPMD), so the n-th call
// of each meets the n-th call of the others.
class Rendezvous {
 public:
  explicit Rendezvous(int64_t devices) : inputs_(static_cast<size_t>(devices)), what_(static_cast<size_t>(devices)) {}

  // Hands in `in` for the call named `what` and waits until every device has, then runs `take`
  // on all devices' operands; returns once every device has taken what it needs.
  Tensor meet(int64_t device, const std::string& what, const Tensor* in, const std::function<Tensor(const std::vector<const Tensor*>&)>& take) {
    std::unique_lock lock(mutex_);
    const uint64_t round = round_;
    inputs_[static_cast<size_t>(device)] = in;
    what_[static_cast<size_t>(device)] = what;
    if (++arrived_ == inputs_.size()) {
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
    Tensor out = take(inputs_);
    lock.lock();
    // Nobody hands in the next operand before every device has read this round's.
    const uint64_t taken_round = round_;
    if (++taken_ == inputs_.size()) {
      taken_ = 0;
      ++taken_rounds_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return taken_rounds_ >= taken_round || failed_; });
      if (taken_rounds_ < taken_round) fail_mesh();
    }
    return out;
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
  std::vector<const Tensor*> inputs_;
  std::vector<std::string> what_;
  size_t arrived_ = 0, taken_ = 0;
  uint64_t round_ = 0, taken_rounds_ = 0;
  bool failed_ = false;
  std::string reason_;
};

struct DevicePlace {
  const Mesh* mesh = nullptr;
  int64_t device = 0;
  Rendezvous* rendezvous = nullptr;
};

thread_local DevicePlace place;

}  // namespace

void run_on_simulated_mesh(const Mesh& mesh, const std::function<void(int64_t)>& device_code) {
  if (place.mesh) fail("a shard_map or pmap inside one is not supported: rematkit runs one mesh level");
  const int64_t n = mesh.num_devices();
  if (n > 4096) fail("a simulated mesh of " + std::to_string(n) + " devices is past what one process runs (4096)");
  Rendezvous rendezvous(n);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < n; ++d) {
    threads.emplace_back([&, d] {
      place = DevicePlace{&mesh, d, &rendezvous};
      try {
        device_code(d);
        // A device done while others still wait at a collective has skipped it: they stop.
        rendezvous.abandon("device " + std::to_string(d) + " finished without it");
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(d)] = std::current_exception();
        rendezvous.abandon("device " + std::to_string(d) + " failed: " + e.what());
      }
      place = DevicePlace{};
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

bool on_simulated_mesh() { return place.mesh != nullptr; }

Tensor run_collective(Prim prim, const Params& params, const std::vector<const Tensor*>& in, const Type& out_type,
                      Arithmetic arithmetic) {
  if (!place.mesh)
    fail(std::string(prim_name(prim)) + " moves values between the devices of a mesh: it runs inside a shard_map or pmap");
  const detail::DeviceView device{*place.mesh, place.device};
  if (!detail::needs_other_devices(prim, params)) return detail::local_collective(prim, params, device, in, out_type);
  const std::string what = std::string(prim_name(prim)) + "[" + [&] {
    std::string p;
    for (const auto& [k, v] : params.entries) p += (p.empty() ? "" : " ") + k + "=" + v.str();
    return p;
  }() + "]";
  return place.rendezvous->meet(place.device, what, in.empty() ? nullptr : in[0], [&](const std::vector<const Tensor*>& all) {
    return detail::gathered_collective(prim, params, device, all, out_type, arithmetic);
  });
}

}  // namespace rematkit
