// How much of the machine other processes took while a configuration was timed: machine-wide busy
// CPU time (/proc/stat) less this process's own (getrusage), as a share of all cores' time. A
// timing row measured while someone else was building says so instead of passing for a clean one.
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace rematkit::bench {

class OthersLoad {
 public:
  OthersLoad() : start_(read()) {}
  // 0 to 1; -1 where /proc/stat cannot be read.
  double share() const {
    const Reading now = read();
    if (!now.ok || !start_.ok || now.total <= start_.total) return -1;
    const double others = (now.busy - start_.busy) - (now.own - start_.own);
    return std::clamp(others / (now.total - start_.total), 0.0, 1.0);
  }

 private:
  struct Reading {
    double busy = 0, total = 0, own = 0;  // CPU seconds: every core busy, every core, this process
    bool ok = false;
  };
  static Reading read() {
    Reading r;
    std::ifstream stat("/proc/stat");
    std::string cpu;
    // user nice system idle iowait irq softirq steal
    double v[8] = {};
    if (!(stat >> cpu) || cpu != "cpu") return r;
    for (double& x : v)
      if (!(stat >> x)) return r;
    const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    r.total = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) / hz;
    r.busy = r.total - (v[3] + v[4]) / hz;
    rusage self{};
    getrusage(RUSAGE_SELF, &self);
    r.own = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
            static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
    r.ok = true;
    return r;
  }
  Reading start_;
};

struct QuietWait {
  double seconds = 0;  // waited
  double cores = -1;   // other processes' load in the last one-second window, in cores; -1: unknown
};

// Waits until other processes use under `cores` cores over a one-second window, or until
// `max_seconds` have passed (0: one window, no wait): as the peers' scripts do before each run, so
// that both sides of a comparison start on a machine in the same state.
inline QuietWait wait_until_quiet(double cores, double max_seconds) {
  const auto started = std::chrono::steady_clock::now();
  const double machine = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  QuietWait out;
  while (true) {
    const OthersLoad window;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double share = window.share();
    out.cores = share < 0 ? -1 : share * machine;
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (share < 0 || out.cores < cores || out.seconds >= max_seconds) return out;
  }
}

}  // namespace rematkit::bench
