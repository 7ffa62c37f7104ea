#include "rematkit/sweep/machine_load.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace rematkit::sweep {

MachineLoad::MachineLoad() : start_(read()) {}

MachineLoad::Reading MachineLoad::read() {
  Reading r;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu") return r;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  r.busy = (user + nice + system + irq + softirq + steal) / tick;
  r.total = r.busy + (idle + iowait) / tick;
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  r.own = static_cast<double>(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
          static_cast<double>(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
  r.ok = true;
  return r;
}

std::optional<double> MachineLoad::others_share() const {
  const Reading now = read();
  if (!start_.ok || !now.ok || now.total <= start_.total) return std::nullopt;
  // /proc/stat counts in ticks and getrusage in microseconds, so a short window can come out a
  // little below zero: clamp.
  const double others = (now.busy - start_.busy) - (now.own - start_.own);
  return std::clamp(others / (now.total - start_.total), 0.0, 1.0);
}

}  // namespace rematkit::sweep
