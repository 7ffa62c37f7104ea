#include "python_errors.hpp"

#include <pybind11/pybind11.h>

#include "rematkit/ir/error.hpp"
#include "rematkit/runtime/memory_limit.hpp"

namespace rematkit::python {

namespace py = pybind11;

namespace {

void raise(const char* type, const py::tuple& args) {
  const py::object error_type = py::module_::import("rematkit._errors").attr(type);
  PyErr_SetObject(error_type.ptr(), error_type(*args).ptr());
}

}  // namespace

void register_error_translator() {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const MemoryLimitError& e) {
      raise("MemoryLimitError", py::make_tuple(e.what(), e.needed(), e.limit()));
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kInternal) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
        return;
      }
      const SourceLocation& where = e.where();
      raise("ProgramError", py::make_tuple(e.what(), where.file.empty() ? py::object(py::none()) : py::str(where.file),
                                           where.line > 0 ? py::object(py::int_(where.line)) : py::object(py::none()),
                                           where.column > 0 ? py::object(py::int_(where.column)) : py::object(py::none())));
    }
  });
}

}  // namespace rematkit::python
