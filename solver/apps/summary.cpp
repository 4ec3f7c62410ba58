#include "apps/summary.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

namespace litpath::apsp {
namespace {

std::string json_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out;
}

// Non-finite numbers have no JSON spelling: null.
std::string json_number(double x) {
    if (!std::isfinite(x)) return "null";
    std::ostringstream out;
    out.precision(9);
    out << x;
    return out.str();
}

// The members of one JSON object, in the order added. A summary is written one
// member per line; an object nested in it on one line.
class JsonObject {
public:
    JsonObject& string(const std::string& key, const std::string& value) {
        return member(key, "\"" + json_escape(value) + "\"");
    }
    JsonObject& string_or_null(const std::string& key, const std::string& value) {
        return value.empty() ? null(key) : string(key, value);
    }
    JsonObject& integer(const std::string& key, std::int64_t value) { return member(key, std::to_string(value)); }
    JsonObject& number(const std::string& key, double value) { return member(key, json_number(value)); }
    JsonObject& boolean(const std::string& key, bool value) { return member(key, value ? "true" : "false"); }
    JsonObject& null(const std::string& key) { return member(key, "null"); }
    JsonObject& object(const std::string& key, const JsonObject& value) { return member(key, value.one_line()); }

    std::string one_line() const { return "{" + joined(", ", "") + "}"; }
    std::string document() const { return "{\n" + joined(",\n", "  ") + "\n}\n"; }

private:
    JsonObject& member(const std::string& key, std::string json) {
        members_.emplace_back(key, std::move(json));
        return *this;
    }
    std::string joined(const char* separator, const char* indent) const {
        std::string out;
        for (std::size_t i = 0; i < members_.size(); ++i) {
            if (i > 0) out += separator;
            out += indent;
            out += "\"" + json_escape(members_[i].first) + "\": " + members_[i].second;
        }
        return out;
    }

    std::vector<std::pair<std::string, std::string>> members_;
};

}  // namespace

std::string SolveSummary::to_json() const {
    const SolvePhaseSeconds& s = seconds;
    JsonObject j;
    j.string("solver", "apsp-fw").string("solver_version", solver_version).string("method", "floyd-warshall");
    j.string("input", input).string_or_null("output", output).string("graph_digest", graph_digest);
    j.integer("n", n).integer("input_entries", input_entries);
    j.integer("ranks", ranks).string("grid", grid).integer("tile", tile).string("broadcast", broadcast);
    j.integer("chunk_bytes", static_cast<std::int64_t>(chunk_bytes)).boolean("lookahead", lookahead);
    j.string("backend", backend).string("isa", isa).integer("threads", threads);
    j.string("thread_placement", thread_placement).string("matrix_residency", matrix_residency);
    j.boolean("gpu_aware_mpi", gpu_aware_mpi);
    j.object("seconds", JsonObject()
                            .number("read", s.read)
                            .number("diagonal", s.diagonal)
                            .number("panel", s.panel)
                            .number("broadcast", s.broadcast)
                            .number("outer", s.outer)
                            .number("write", s.write)
                            .number("validate", s.validate)
                            .number("checkpoint", s.checkpoint)
                            .number("solve", s.solve));
    if (checkpoint) {
        JsonObject c;
        c.string("dir", checkpoint->dir).string("every", checkpoint->every).integer("written", checkpoint->written);
        if (checkpoint->resumed_from >= 0) c.integer("resumed_from", checkpoint->resumed_from);
        else c.null("resumed_from");
        j.object("checkpoint", c);
    } else {
        j.null("checkpoint");
    }
    j.number("total_seconds", total_seconds);
    j.number("semiring_ops", semiring_ops);
    j.number("semiring_rate", s.solve > 0 ? semiring_ops / s.solve : 0);
    j.number("semiring_gflops", s.solve > 0 ? semiring_ops / s.solve / 1e9 : 0);
    if (distances_checksum) {
        char hex[19];
        std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(*distances_checksum));
        j.string("distances_checksum", hex);
    } else {
        j.null("distances_checksum");
    }
    if (validate) {
        j.object("validate", JsonObject()
                                 .integer("rows", validate->rows)
                                 .number("max_abs_error", validate->max_abs_error)
                                 .number("max_rel_error", validate->max_rel_error)
                                 .integer("reachability_mismatches", validate->reachability_mismatches)
                                 .number("tolerance", validate->tolerance)
                                 .boolean("ok", validate->ok));
    } else {
        j.null("validate");
    }
    j.boolean("ok", ok());
    return j.document();
}

std::string RowsSummary::to_json() const {
    const double relaxations = static_cast<double>(rows) * static_cast<double>(edges);
    JsonObject j;
    j.string("solver", "apsp-fw").string("solver_version", solver_version);
    j.string("method", "rows").string("algorithm", "dijkstra-rows");
    j.string("input", input).string_or_null("output", output).string("sources_file", sources_file);
    j.string("graph_digest", graph_digest).integer("n", n).integer("input_entries", input_entries);
    j.integer("edges", edges).integer("rows", rows).integer("ranks", ranks).integer("threads", threads);
    j.string("thread_placement", thread_placement);
    j.object("seconds",
             JsonObject().number("read", read_seconds).number("solve", solve_seconds).number("write", write_seconds));
    j.number("total_seconds", total_seconds);
    j.number("rows_per_second", solve_seconds > 0 ? static_cast<double>(rows) / solve_seconds : 0);
    j.number("edges_per_second", solve_seconds > 0 ? relaxations / solve_seconds : 0);
    j.null("validate").boolean("ok", true);  // no --validate here: a run that gets this far is ok
    return j.document();
}

void publish_summary(const std::string& json, const std::string& path) {
    std::cout << json << std::flush;
    if (!path.empty()) {
        std::ofstream out(path);
        out << json;
        if (!out) std::cerr << "apsp-fw: warning: could not write " << path << std::endl;
    }
}

}  // namespace litpath::apsp
