// rematkit._rematkit: the C++ library for the Python package (python/rematkit/), which wraps these
// functions' plain answers in objects. Every function that works releases the GIL; arrays cross as
// float64 NumPy arrays (exact for every dtype a tensor holds), and the package converts dtypes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "program_answers.hpp"
#include "python_errors.hpp"
#include "rematkit/io/program_file.hpp"
#include "rematkit/ir/parser.hpp"
#include "rematkit/plugin_host/plugin_registry.hpp"
#include "rematkit/ir/printer.hpp"
#include "rematkit/sweep/sweep_config.hpp"
#include "sweep_binding.hpp"

namespace py = pybind11;
using namespace rematkit;
using namespace rematkit::python;

namespace {

using Release = py::call_guard<py::gil_scoped_release>;

py::dict type_dict(const Type& t) {
  py::dict d;
  d["dtype"] = std::string(dtype_name(t.dtype));
  d["shape"] = py::tuple(py::cast(t.shape));
  d["memory_space"] = std::string(memory_space_name(t.space));
  d["text"] = t.str();
  return d;
}

py::list binders(const Program& p, const std::vector<int>& vars) {
  py::list out;
  for (int v : vars) {
    py::dict d = type_dict(p.vars[static_cast<size_t>(v)].type);
    d["name"] = p.vars[static_cast<size_t>(v)].name;
    out.append(d);
  }
  return out;
}

// A float64 array as a tensor of `type` (shape checked by the plan), rounded to its dtype. A complex
// tensor comes as its real and imaginary parts side by side, a last dim of 2 (_arrays.py makes it).
Tensor tensor_of(const py::array_t<double, py::array::c_style | py::array::forcecast>& values, const Type& type,
                 const std::string& what) {
  const py::buffer_info info = values.request();
  const int64_t parts = is_complex(type.dtype) ? 2 : 1;
  if (info.size != parts * type.num_elements())
    fail(what + " has " + std::to_string(info.size / parts) + " elements where the program's " + type.str() + " has " +
         std::to_string(type.num_elements()));
  Tensor t = Tensor::filled(type, 0.0);
  const double* data = static_cast<const double*>(info.ptr);
  for (size_t i = 0; i < t.data.size(); ++i) {
    t.data[i] = round_to_dtype(data[parts * i], type.dtype, Arithmetic::kFloat32);
    if (parts == 2) t.imag[i] = round_to_dtype(data[2 * i + 1], type.dtype, Arithmetic::kFloat32);
  }
  return t;
}

py::array_t<double> array_of(const Tensor& t) {
  std::vector<py::ssize_t> shape(t.type.shape.begin(), t.type.shape.end());
  if (is_complex(t.type.dtype)) shape.push_back(2);  // real and imaginary parts, as tensor_of takes them
  py::array_t<double> out(shape);
  double* data = out.mutable_data();
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (t.imag.empty()) {
      data[i] = t.data[i];
    } else {
      data[2 * i] = t.data[i];
      data[2 * i + 1] = t.imag[i];
    }
  }
  return out;
}

std::vector<Tensor> tensors(const Program& p, const std::vector<int>& vars, const std::vector<py::array_t<double>>& given,
                            const char* what) {
  if (given.size() != vars.size())
    fail(std::string(what) + ": " + std::to_string(given.size()) + " given where the program has " + std::to_string(vars.size()));
  std::vector<Tensor> out;
  for (size_t i = 0; i < vars.size(); ++i) {
    const Var& v = p.vars[static_cast<size_t>(vars[i])];
    out.push_back(tensor_of(given[i], v.type, std::string(what) + " '" + v.name + "'"));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_rematkit, m) {
  m.doc() = "rematkit's C++ library; use the rematkit package";
  register_error_translator();

  py::class_<Program>(m, "Program")
      .def("text", [](const Program& p) { return print_program(p); })
      .def_property_readonly("arguments", [](const Program& p) { return binders(p, p.invars); })
      .def_property_readonly("constants", [](const Program& p) { return binders(p, p.constvars); })
      .def_property_readonly("outputs",
                             [](const Program& p) {
                               py::list out;
                               for (const Atom& a : p.outvars) out.append(type_dict(p.type_of(a)));
                               return out;
                             })
      .def_property_readonly("equations", [](const Program& p) { return p.eqns.size(); });

  m.def("parse", [](const std::string& text, const std::string& name) { return parse_program(text, name); }, Release());
  m.def("load", [](const std::string& path) { return parse_program(read_program_text(path), program_source_name(path)); },
        Release());

  py::class_<ProgramEdits>(m, "ProgramEdits")
      .def(py::init([](std::vector<std::string> wrt, std::string retarget_policy, std::string mesh, bool whole_arrays) {
             return ProgramEdits{std::move(wrt), std::move(retarget_policy), std::move(mesh), whole_arrays};
           }),
           py::arg("wrt"), py::arg("retarget_policy"), py::arg("mesh") = "", py::arg("whole_arrays") = false);
  py::class_<RunOn>(m, "RunOn")
      .def(py::init([](std::vector<std::string> backends, int threads, std::optional<int64_t> max_memory,
                       std::vector<std::string> backend_options) {
             return RunOn{std::move(backends), threads, max_memory, std::move(backend_options)};
           }),
           py::arg("backends"), py::arg("threads"), py::arg("max_memory"), py::arg("backend_options"));

  py::class_<ResidualRow>(m, "ResidualRow")
      .def_readonly("dtype", &ResidualRow::dtype)
      .def_readonly("shape", &ResidualRow::shape)
      .def_readonly("nbytes", &ResidualRow::nbytes)
      .def_readonly("source", &ResidualRow::source)
      .def_readonly("file", &ResidualRow::file)
      .def_readonly("line", &ResidualRow::line)
      .def_readonly("column", &ResidualRow::column)
      .def_readonly("memory_space", &ResidualRow::memory_space)
      .def_readonly("why", &ResidualRow::why)
      .def_readonly("line_text", &ResidualRow::line_text);
  m.def("residuals", &residual_rows, Release());
  m.def("memory_json", &memory_json, Release());

  py::class_<SolveRequest>(m, "SolveRequest")
      .def(py::init<>())
      .def_readwrite("budget", &SolveRequest::budget)
      .def_readwrite("cost", &SolveRequest::cost)
      .def_readwrite("for_jax", &SolveRequest::for_jax)
      .def_readwrite("offload", &SolveRequest::offload)
      .def_readwrite("structure", &SolveRequest::structure)
      .def_readwrite("time_limit_seconds", &SolveRequest::time_limit_seconds);
  py::class_<SolveAnswer::Equation>(m, "SolvedEquation")
      .def_readonly("site", &SolveAnswer::Equation::site)
      .def_readonly("primitive", &SolveAnswer::Equation::primitive)
      .def_readonly("signature", &SolveAnswer::Equation::signature)
      .def_readonly("type", &SolveAnswer::Equation::type)
      .def_readonly("where", &SolveAnswer::Equation::where)
      .def_readonly("decision", &SolveAnswer::Equation::decision)
      .def_readonly("read_by_backward", &SolveAnswer::Equation::read_by_backward)
      .def_readonly("bytes", &SolveAnswer::Equation::bytes)
      .def_readonly("iterations", &SolveAnswer::Equation::iterations)
      .def_readonly("cost", &SolveAnswer::Equation::cost);
  py::class_<SolveAnswer>(m, "SolveAnswer")
      .def_readonly("summary", &SolveAnswer::summary)
      .def_readonly("decisions_json", &SolveAnswer::decisions_json)
      .def_readonly("jax_policy_text", &SolveAnswer::jax_policy)
      .def_readonly("names_saved", &SolveAnswer::names_saved)
      .def_readonly("names_offloaded", &SolveAnswer::names_offloaded)
      .def_readonly("names_why_not", &SolveAnswer::names_why_not)
      .def_readonly("budget_bytes", &SolveAnswer::budget_bytes)
      .def_readonly("peak_bytes", &SolveAnswer::peak_bytes)
      .def_readonly("smallest_peak", &SolveAnswer::smallest_peak)
      .def_readonly("residual_bytes", &SolveAnswer::residual_bytes)
      .def_readonly("recompute_flops", &SolveAnswer::recompute_flops)
      .def_readonly("cost", &SolveAnswer::cost)
      .def_readonly("method", &SolveAnswer::method)
      .def_readonly("proven_optimal", &SolveAnswer::proven_optimal)
      .def_readonly("whole_program", &SolveAnswer::whole_program)
      .def_readonly("seconds", &SolveAnswer::seconds)
      .def_readonly("equations", &SolveAnswer::equations);
  m.def("solve", &python::solve, Release());

  m.def("grad",
        [](const Program& p, const std::vector<py::array_t<double>>& constants, const std::vector<py::array_t<double>>& arguments,
           const std::string& policy, const ProgramEdits& edits, const RunOn& on) {
          const std::vector<Tensor> c = tensors(p, p.constvars, constants, "constants");
          const std::vector<Tensor> a = tensors(p, p.invars, arguments, "arguments");
          GradAnswer answer;
          {
            py::gil_scoped_release released;
            answer = python::grad(p, c, a, policy, edits, on);
          }
          py::list outputs, gradients;
          for (const Tensor& t : answer.outputs) outputs.append(array_of(t));
          for (const std::optional<Tensor>& g : answer.gradients) gradients.append(g ? py::object(array_of(*g)) : py::object(py::none()));
          return py::make_tuple(outputs, gradients);
        });

  py::class_<CompareRow>(m, "CompareRow")
      .def_readonly("policy", &CompareRow::policy)
      .def_readonly("residuals", &CompareRow::residuals)
      .def_readonly("residual_bytes", &CompareRow::residual_bytes)
      .def_readonly("predicted_peak", &CompareRow::predicted_peak)
      .def_readonly("measured_peak", &CompareRow::measured_peak)
      .def_readonly("forward_flops", &CompareRow::forward_flops)
      .def_readonly("recompute_flops", &CompareRow::recompute_flops)
      .def_readonly("backward_flops", &CompareRow::backward_flops)
      .def_readonly("median_ms", &CompareRow::median_ms)
      .def_readonly("max_grad_diff", &CompareRow::max_grad_diff);
  m.def("compare", &python::compare, Release());

  m.def("sweep", [](const std::string& yaml, const std::string& source, bool is_path) {
    sweep::SweepConfig config;
    {
      py::gil_scoped_release released;
      config = is_path ? sweep::load_sweep(source) : sweep::parse_sweep(yaml, source);
    }
    const SweepAnswer answer = run_sweep_interruptibly(config);
    return py::make_tuple(answer.rows_json, answer.interrupted);
  });

  m.def("backends", [] { return default_plugins().backend_names(); });
  m.def("policies", [] { return default_plugins().policies().names(); });
}
