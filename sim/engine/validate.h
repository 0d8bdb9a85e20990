// The one static check of a graph, shared by `stepsim analyze` (sim/report/analyze.h) and every run
// (simulate, sim/engine/simulation.h): shape inference over the whole graph (sim/shape). A graph it
// rejects is never elaborated, and the error a run prints is the one analyze prints, so the two
// cannot disagree on what is valid (testbench/agreement checks it over every graph we have).
#pragma once

#include <memory>

#include "sim/graph/graph.h"
#include "sim/shape/infer.h"

namespace stepsim {

// The stream types of every node; throws shape::ShapeError naming the node, both ends of an edge
// and both shapes, or std::invalid_argument for a malformed graph. `stepsim analyze` calls it.
shape::GraphTypes validate_graph(const Graph& g, shape::SymbolTable& syms);

// What the check before a run found: the report's symbolic section reads it (sim/report/analyze.h), so
// a run infers the shapes once.
struct StaticCheck {
  shape::SymbolTable syms;
  shape::GraphTypes types;
};

// The check before a run: validate_graph, except that a graph inference cannot type
// (shape::UntypableGraph: a cycle without declared types) is left to the simulator's own checks
// (null then); analyze says so in its error ("cyclic graphs are typed only by the simulator").
std::shared_ptr<const StaticCheck> check_before_run(const Graph& g);

}  // namespace stepsim
