// How busy the rest of the machine is while a sweep times steps: the CPU time every process spent
// (/proc/stat) less this process's own (getrusage), as a share of all cores' time.
#pragma once

namespace rematkit::sweep {

class MachineLoad {
 public:
  MachineLoad();  // starts the window
  // Other processes' share of the machine's CPU time since the window started, 0 to 1; 0 where
  // /proc/stat cannot be read.
  double others_share() const;

 private:
  struct Reading {
    double busy = 0, total = 0;  // machine-wide CPU seconds, all cores
    double own = 0;              // this process's CPU seconds, all threads
    bool ok = false;
  };
  static Reading read();
  Reading start_;
};

}  // namespace rematkit::sweep
