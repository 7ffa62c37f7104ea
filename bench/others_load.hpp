// How much of the machine other processes took while a configuration was timed: machine-wide busy
// CPU time (/proc/stat) less this process's own (getrusage), as a share of all cores' time. A
// timing row measured while someone else was building says so instead of passing for a clean one.
#pragma once
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

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

}  // namespace rematkit::bench
