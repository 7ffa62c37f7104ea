// Loads a program in jaxpr syntax and prints what its backward pass keeps (JAX's
// print_saved_residuals, explained) and the memory plan of a gradient.
//   residual_report FILE.jaxpr [POLICY]     POLICY checkpoints the whole program
#include <rematkit/rematkit.hpp>
#include <rematkit/io/program_file.hpp>

#include <iostream>

int main(int argc, char** argv) try {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: residual_report FILE.jaxpr [POLICY]\n";
    return 2;
  }
  rematkit::PlanOptions options;
  if (argc == 3) options.policy = argv[2];
  const rematkit::Plan plan(rematkit::load_program(argv[1]), options);
  std::cout << plan.residual_report(/*explain=*/true);

  const rematkit::ArenaLayout& layout = plan.layout();
  std::cout << "memory plan: " << layout.buffers.size() << " buffers, device arena "
            << layout.arena(rematkit::MemorySpace::kDevice) << " bytes (at most "
            << layout.live_peak(rematkit::MemorySpace::kDevice) << " live at once), pinned_host arena "
            << layout.arena(rematkit::MemorySpace::kPinnedHost) << " bytes\n";
} catch (const rematkit::Error& e) {
  std::cerr << "residual_report: " << e.what() << "\n";
  return 2;
}
