#include "rematkit/sweep/sweep_output.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "rematkit/ir/error.hpp"

namespace rematkit::sweep {
namespace {

// A column's header and cell text; its kind says how JSON holds the cell (a list is a JSON array of
// numbers, and its numbers joined by spaces in one CSV cell; a boolean is true or false in both). The tables, CSV and JSON share them.
enum class Kind { kText, kNumber, kNumbers, kBoolean };
struct Column {
  const char* name;
  Kind kind;
  std::string (*cell)(const SweepRow&);
};

std::string number(double v, const char* format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}
std::string bytes(int64_t v) { return std::to_string(v); }

// The wide table's columns, the first in the files too.
const Column kColumns[] = {
    {"config", Kind::kNumber, [](const SweepRow& r) { return std::to_string(r.config); }},
    {"model", Kind::kText, [](const SweepRow& r) { return r.model; }},
    {"policy", Kind::kText, [](const SweepRow& r) { return r.policy; }},
    {"backend", Kind::kText, [](const SweepRow& r) { return r.backend; }},
    {"threads", Kind::kNumber, [](const SweepRow& r) { return std::to_string(r.threads); }},
    {"median_ms", Kind::kNumber, [](const SweepRow& r) { return number(r.median_ms, "%.4f"); }},
    {"min_ms", Kind::kNumber, [](const SweepRow& r) { return number(r.min_ms, "%.4f"); }},
    {"max_ms", Kind::kNumber, [](const SweepRow& r) { return number(r.max_ms, "%.4f"); }},
    {"predicted_peak_device", Kind::kNumber, [](const SweepRow& r) { return bytes(r.predicted_peak[0]); }},
    {"measured_peak_device", Kind::kNumber, [](const SweepRow& r) { return bytes(r.measured_peak[0]); }},
    {"predicted_peak_pinned_host", Kind::kNumber, [](const SweepRow& r) { return bytes(r.predicted_peak[1]); }},
    {"measured_peak_pinned_host", Kind::kNumber, [](const SweepRow& r) { return bytes(r.measured_peak[1]); }},
    {"residual_bytes", Kind::kNumber, [](const SweepRow& r) { return bytes(r.residual_bytes); }},
    {"forward_flops", Kind::kNumber, [](const SweepRow& r) { return std::to_string(r.forward_flops); }},
    {"recompute_flops", Kind::kNumber, [](const SweepRow& r) { return std::to_string(r.recompute_flops); }},
    {"backward_flops", Kind::kNumber, [](const SweepRow& r) { return std::to_string(r.backward_flops); }},
    {"max_grad_diff", Kind::kNumber, [](const SweepRow& r) { return number(r.max_grad_diff, "%.3g"); }},
};

// How far to trust a row's time, and its place in the grid, in the files only. A JSON file without
// them (from before they were written) still reads, with SweepRow's defaults.
const Column kTimingColumns[] = {
    {"grid_size", Kind::kNumber, [](const SweepRow& r) { return std::to_string(r.grid_size); }},
    {"median_low_ms", Kind::kNumber, [](const SweepRow& r) { return number(r.median_low_ms, "%.4f"); }},
    {"median_high_ms", Kind::kNumber, [](const SweepRow& r) { return number(r.median_high_ms, "%.4f"); }},
    {"versus_baseline", Kind::kText, [](const SweepRow& r) { return r.versus_baseline; }},
    {"machine_load", Kind::kNumber, [](const SweepRow& r) { return number(r.machine_load, "%.4f"); }},
    {"process_peak_rss", Kind::kNumber, [](const SweepRow& r) { return bytes(r.process_peak_rss); }},
    {"timed_alone", Kind::kBoolean, [](const SweepRow& r) { return std::string(r.timed_alone ? "true" : "false"); }},
    {"samples_ms", Kind::kNumbers,
     [](const SweepRow& r) {
       std::string cell;
       for (double ms : r.samples_ms) cell += (cell.empty() ? "" : " ") + number(ms, "%.4f");
       return cell;
     }},
    {"forward_comm_bytes", Kind::kNumber, [](const SweepRow& r) { return bytes(r.forward_comm_bytes); }},
    {"recompute_comm_bytes", Kind::kNumber, [](const SweepRow& r) { return bytes(r.recompute_comm_bytes); }},
    {"backward_comm_bytes", Kind::kNumber, [](const SweepRow& r) { return bytes(r.backward_comm_bytes); }},
    {"partial", Kind::kBoolean, [](const SweepRow& r) { return std::string(r.partial ? "true" : "false"); }},
    {"failure", Kind::kText, [](const SweepRow& r) { return r.failure; }},
};

template <BufferKind kind>
std::string peak_bytes_of(const SweepRow& r) {
  return bytes(r.peak_bytes[static_cast<size_t>(kind)]);
}

// Where the device peak comes from, in CSV and JSON only: the terminal table stays narrow. No
// offloaded residuals: they are never in device memory.
const Column kPeakColumns[] = {
    {"peak_pass", Kind::kText, [](const SweepRow& r) { return r.peak_pass; }},
    {"peak_parameter_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kParameter>},
    {"peak_data_input_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kDataInput>},
    {"peak_gradient_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kGradient>},
    {"peak_saved_residual_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kSavedResidual>},
    {"peak_recomputed_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kRecomputed>},
    {"peak_cotangent_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kCotangent>},
    {"peak_forward_temporary_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kForwardTemporary>},
    {"peak_kernel_workspace_bytes", Kind::kNumber, peak_bytes_of<BufferKind::kKernelWorkspace>},
};

// The columns of the CSV and JSON files: the wide table's, then the timing's, then the peak's.
std::vector<const Column*> file_columns() {
  std::vector<const Column*> columns;
  for (const Column& c : kColumns) columns.push_back(&c);
  for (const Column& c : kTimingColumns) columns.push_back(&c);
  for (const Column& c : kPeakColumns) columns.push_back(&c);
  return columns;
}

// A number for JSON, or null for a NaN or infinite one (JSON has neither).
nlohmann::json json_number(const std::string& text) {
  const nlohmann::json v = nlohmann::json::parse(text, nullptr, false);
  return v.is_discarded() ? nlohmann::json(nullptr) : v;
}

}  // namespace

std::string format_wide_table(const std::vector<SweepRow>& rows) {
  std::vector<std::vector<std::string>> cells(rows.size() + 1);
  for (const Column& c : kColumns) cells[0].push_back(c.name);
  for (size_t i = 0; i < rows.size(); ++i)
    for (const Column& c : kColumns) cells[i + 1].push_back(c.cell(rows[i]));
  std::vector<size_t> width(std::size(kColumns), 0);
  for (const auto& line : cells)
    for (size_t k = 0; k < line.size(); ++k) width[k] = std::max(width[k], line[k].size());
  std::string out;
  for (const auto& line : cells) {
    for (size_t k = 0; k < line.size(); ++k) {
      const std::string pad(width[k] - line[k].size(), ' ');
      out += (k ? "  " : "") + (kColumns[k].kind == Kind::kText ? line[k] + pad : pad + line[k]);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "\n";
  }
  return out;
}

std::string format_csv(const std::vector<SweepRow>& rows) {
  // RFC 4180: a cell with a comma or a quote (backend lists, policy calls) is quoted, quotes doubled.
  auto quoted = [](const std::string& cell) {
    if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
    std::string out = "\"";
    for (char ch : cell) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
  };
  const std::vector<const Column*> columns = file_columns();
  std::string out;
  for (const Column* c : columns) out += std::string(c == columns.front() ? "" : ",") + c->name;
  out += "\n";
  for (const SweepRow& r : rows) {
    for (const Column* c : columns) out += (c == columns.front() ? "" : ",") + quoted(c->cell(r));
    out += "\n";
  }
  return out;
}

std::string format_json(const std::vector<SweepRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const SweepRow& r : rows) {
    nlohmann::json row;
    for (const Column* c : file_columns()) {
      const std::string cell = c->cell(r);
      if (c->kind == Kind::kText) {
        row[c->name] = cell;
      } else if (c->kind == Kind::kNumber) {
        row[c->name] = json_number(cell);
      } else if (c->kind == Kind::kBoolean) {
        row[c->name] = cell == "true";
      } else {
        row[c->name] = nlohmann::json::array();
        std::istringstream numbers(cell);
        for (std::string n; numbers >> n;) row[c->name].push_back(json_number(n));
      }
    }
    out.push_back(row);
  }
  return out.dump(2) + "\n";
}

std::vector<SweepRow> parse_json_rows(const std::string& text, const std::string& source) {
  const nlohmann::json rows = nlohmann::json::parse(text, nullptr, false);
  if (rows.is_discarded() || !rows.is_array()) fail(source + ": not a sweep's JSON output (a list of rows)");
  std::vector<SweepRow> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& j = rows[i];
    auto field = [&](const char* key) -> const nlohmann::json& {
      if (!j.is_object() || !j.contains(key) || !(j[key].is_number() || j[key].is_string() || j[key].is_null()))
        fail(source + ": row " + std::to_string(i) + " has no '" + key + "'");
      return j[key];
    };
    auto number = [&](const char* key) {
      const nlohmann::json& v = field(key);
      if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
      if (!v.is_number()) fail(source + ": row " + std::to_string(i) + ": '" + key + "' is not a number");
      return v.get<double>();
    };
    auto text_of = [&](const char* key) {
      const nlohmann::json& v = field(key);
      if (!v.is_string()) fail(source + ": row " + std::to_string(i) + ": '" + key + "' is not a string");
      return v.get<std::string>();
    };
    SweepRow r;
    r.config = static_cast<size_t>(number("config"));
    r.model = text_of("model");
    r.policy = text_of("policy");
    r.backend = text_of("backend");
    r.threads = static_cast<int>(number("threads"));
    r.median_ms = number("median_ms");
    r.min_ms = number("min_ms");
    r.max_ms = number("max_ms");
    r.predicted_peak = {static_cast<int64_t>(number("predicted_peak_device")),
                        static_cast<int64_t>(number("predicted_peak_pinned_host"))};
    r.measured_peak = {static_cast<int64_t>(number("measured_peak_device")),
                       static_cast<int64_t>(number("measured_peak_pinned_host"))};
    r.residual_bytes = static_cast<int64_t>(number("residual_bytes"));
    r.forward_flops = static_cast<int64_t>(number("forward_flops"));
    r.recompute_flops = static_cast<int64_t>(number("recompute_flops"));
    r.backward_flops = static_cast<int64_t>(number("backward_flops"));
    r.max_grad_diff = number("max_grad_diff");
    // Written since the rows had their interval, verdict and load: SweepRow's defaults without them.
    auto has = [&](const char* key) { return j.is_object() && j.contains(key); };
    if (has("grid_size")) r.grid_size = static_cast<size_t>(number("grid_size"));
    else r.config += 1;  // such files counted configurations from 0
    if (has("median_low_ms")) r.median_low_ms = number("median_low_ms");
    if (has("median_high_ms")) r.median_high_ms = number("median_high_ms");
    if (has("versus_baseline")) r.versus_baseline = text_of("versus_baseline");
    if (has("machine_load")) r.machine_load = number("machine_load");
    if (has("process_peak_rss")) r.process_peak_rss = static_cast<int64_t>(number("process_peak_rss"));
    if (has("forward_comm_bytes")) r.forward_comm_bytes = static_cast<int64_t>(number("forward_comm_bytes"));
    if (has("recompute_comm_bytes")) r.recompute_comm_bytes = static_cast<int64_t>(number("recompute_comm_bytes"));
    if (has("backward_comm_bytes")) r.backward_comm_bytes = static_cast<int64_t>(number("backward_comm_bytes"));
    if (has("partial")) {
      if (!j["partial"].is_boolean()) fail(source + ": row " + std::to_string(i) + ": 'partial' is not true or false");
      r.partial = j["partial"].get<bool>();
    }
    if (has("timed_alone")) {
      if (!j["timed_alone"].is_boolean()) fail(source + ": row " + std::to_string(i) + ": 'timed_alone' is not true or false");
      r.timed_alone = j["timed_alone"].get<bool>();
    }
    if (has("failure")) r.failure = text_of("failure");
    if (has("samples_ms")) {
      const nlohmann::json& samples = j["samples_ms"];
      if (!samples.is_array()) fail(source + ": row " + std::to_string(i) + ": 'samples_ms' is not a list of numbers");
      for (const nlohmann::json& ms : samples) {
        if (!ms.is_number() && !ms.is_null())
          fail(source + ": row " + std::to_string(i) + ": 'samples_ms' is not a list of numbers");
        r.samples_ms.push_back(ms.is_null() ? std::numeric_limits<double>::quiet_NaN() : ms.get<double>());
      }
    }
    r.peak_pass = text_of("peak_pass");
    for (const Column& c : kPeakColumns) {
      const std::string name = c.name;
      for (size_t k = 0; k < kNumBufferKinds; ++k)
        if (name == "peak_" + buffer_kind_key(static_cast<BufferKind>(k)) + "_bytes")
          r.peak_bytes[k] = static_cast<int64_t>(number(c.name));
    }
    out.push_back(r);
  }
  return out;
}

namespace {

// "2, 4, 7-9": configuration numbers as runs.
std::string number_runs(const std::vector<size_t>& numbers) {
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(numbers[i]) + (j > i ? "-" + std::to_string(numbers[j]) : "");
    i = j + 1;
  }
  return out;
}

// The missing configurations, said exactly: every one when they are few, else as the shards of
// `count` that would have run them ("shard 2/4's 45 configurations").
std::string missing_text(const std::vector<size_t>& missing, size_t grid) {
  for (size_t count = 2; count <= grid && count <= 4096; ++count) {
    // Is `missing` exactly the union of some shards I/count? (A shard's configurations share (c-1) % count.)
    std::vector<bool> shard_missing(count, false), shard_present(count, false);
    size_t m = 0;
    for (size_t c = 1; c <= grid; ++c) {
      const bool gone = m < missing.size() && missing[m] == c;
      if (gone) ++m;
      (gone ? shard_missing : shard_present)[(c - 1) % count] = true;
    }
    bool clean = true;
    std::vector<size_t> shards;
    for (size_t s = 0; s < count && clean; ++s) {
      clean = !(shard_missing[s] && shard_present[s]);
      if (shard_missing[s]) shards.push_back(s + 1);
    }
    if (!clean || shards.size() == count) continue;
    if (missing.size() <= 12) break;  // few enough to list
    std::string names;
    for (size_t s : shards) names += (names.empty() ? "" : ", ") + std::to_string(s) + "/" + std::to_string(count);
    return std::to_string(missing.size()) + " of " + std::to_string(grid) + " configurations are missing: those of shard" +
           (shards.size() == 1 ? " " : "s ") + names + " (was it left out?)";
  }
  return std::to_string(missing.size()) + " of " + std::to_string(grid) + " configurations " +
         (missing.size() == 1 ? "is" : "are") + " missing: " + number_runs(missing);
}

}  // namespace

std::vector<SweepRow> merge_shards(const std::vector<std::pair<std::string, std::vector<SweepRow>>>& shards) {
  std::map<size_t, std::pair<SweepRow, std::string>> by_config;
  // The grid's size as the rows say it; rows from before grid_size was written say nothing, and
  // the largest configuration number stands in.
  size_t grid = 0;
  std::string grid_source;
  for (const auto& [source, rows] : shards)
    for (const SweepRow& row : rows) {
      if (row.config < 1) fail(source + ": configuration " + std::to_string(row.config) + " is not a grid position");
      const bool sized = row.grid_size >= row.config && row.grid_size > 1;
      if (sized && !grid_source.empty() && row.grid_size != grid)
        fail(source + " is from a sweep of " + std::to_string(row.grid_size) + " configurations, " + grid_source +
             " from one of " + std::to_string(grid));
      if (sized) grid = row.grid_size, grid_source = source;
      const auto [it, inserted] = by_config.emplace(row.config, std::make_pair(row, source));
      if (!inserted)
        fail("configuration " + std::to_string(row.config) + " is in both " + it->second.second + " and " + source);
    }
  if (!by_config.empty()) grid = std::max(grid, by_config.rbegin()->first);
  std::vector<size_t> missing;
  for (size_t c = 1; c <= grid; ++c)
    if (!by_config.count(c)) missing.push_back(c);
  if (!missing.empty()) fail(missing_text(missing, grid));
  std::vector<SweepRow> merged;
  for (auto& [config, entry] : by_config) merged.push_back(std::move(entry.first));
  return merged;
}

}  // namespace rematkit::sweep
