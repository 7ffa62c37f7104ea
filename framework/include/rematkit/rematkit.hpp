// rematkit's public API in one include: programs (parse, build), plans (a program differentiated
// under a checkpoint policy and compiled for backends, with its residual report and memory plan),
// forward passes, gradients and training steps. Errors are rematkit::Error (a std::runtime_error)
// with a one-line message. It needs only rematkit::core.
//
//   rematkit::PlanOptions options;
//   options.policy = "nothing_saveable";
//   rematkit::Plan plan(rematkit::parse_program(text, "model.jaxpr"), options);
//   std::cout << plan.residual_report();
//   rematkit::TrainingStep step = plan.training_step(arguments, /*params=*/{1, 2}, 0.01);
//   float loss = step.run();
//
// Beside it: rematkit/flax/model_builder.hpp builds models as Flax does (rematkit::flax);
// rematkit/io/program_file.hpp and rematkit/io/tensor_json.hpp read and write files
// (rematkit::io); rematkit/autodiff/linearize.hpp, rematkit/schedule/step_program.hpp and
// rematkit/runtime/step_runner.hpp are the layers under a Plan, for tools and research.
#pragma once

#include "rematkit/ir/error.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/api/plan.hpp"
#include "rematkit/ir/program.hpp"
#include "rematkit/ir/program_builder.hpp"
#include "rematkit/interpreter/tensor.hpp"
#include "rematkit/runtime/training_step.hpp"
#include "rematkit/ir/types.hpp"
