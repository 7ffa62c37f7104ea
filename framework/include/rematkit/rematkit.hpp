// Everything an application needs, in one include: programs (parse, load, build), policies and
// backends from plugins, plans with their residual report and memory plan, gradients and training.
//
//   rematkit::Model model = rematkit::ModelBuilder().dense(128).relu().dense(10).build(32, 64);
//   rematkit::PlanOptions options;
//   options.policy = "nothing_saveable";
//   rematkit::Plan plan(model.program, options);
//   std::cout << plan.residual_report();
//   rematkit::TrainingStep step = plan.training_step(model.arguments, model.params, 0.01);
//   float loss = step.run();
//
// Errors are rematkit::Error (a std::runtime_error) with a one-line message.
#pragma once

#include "rematkit/error.hpp"
#include "rematkit/gradient.hpp"
#include "rematkit/linearize.hpp"
#include "rematkit/arena_layout.hpp"
#include "rematkit/model_builder.hpp"
#include "rematkit/parser.hpp"
#include "rematkit/plan.hpp"
#include "rematkit/plugin_registry.hpp"
#include "rematkit/printer.hpp"
#include "rematkit/program.hpp"
#include "rematkit/program_builder.hpp"
#include "rematkit/residual_report.hpp"
#include "rematkit/tensor.hpp"
#include "rematkit/training_step.hpp"
