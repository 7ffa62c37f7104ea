#include "sweep_binding.hpp"

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <future>

#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/sweep/sweep_output.hpp"
#include "rematkit/sweep/sweep_runner.hpp"

namespace rematkit::python {

namespace py = pybind11;

SweepAnswer run_sweep_interruptibly(const sweep::SweepConfig& config) {
  std::atomic<bool> stop{false};
  sweep::SweepRunOptions options;
  options.stop = &stop;
  std::future<sweep::SweepResult> running;
  bool signalled = false;
  {
    py::gil_scoped_release released;
    running = std::async(std::launch::async, [&] { return sweep::run_sweep(config, default_plugins(), options); });
    while (running.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
      if (signalled) continue;
      py::gil_scoped_acquire held;
      if (PyErr_CheckSignals() != 0) {
        PyErr_Clear();  // raised again by the caller, with the rows that finished
        signalled = true;
        stop.store(true);
      }
    }
  }
  const sweep::SweepResult result = running.get();  // rethrows the sweep's own errors
  return SweepAnswer{sweep::format_json(result.rows), signalled || result.interrupted};
}

}  // namespace rematkit::python
