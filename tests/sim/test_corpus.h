// The released corpus (shared/reference) narrowed to some studies, for validation tests that need real
// points but not the whole leave-one-study-out run.
#pragma once

#include <set>
#include <string>

#include "servelab/common/paths.h"
#include "servelab/sim/corpus.h"

namespace servelab::sim::testing {

/// The points, studies and sources of the released corpus whose study is in `studies`. Throws as
/// sim::load_corpus when the corpus cannot be read.
inline Corpus corpus_subset(const std::set<std::string>& studies) {
  const auto all = load_corpus(common::data_dir().parent_path() / "reference");
  Corpus c;
  c.sources = all.sources;
  for (const auto& p : all.points)
    if (studies.count(p.study)) c.points.push_back(p);
  for (const auto& s : all.studies)
    if (studies.count(s)) c.studies.push_back(s);
  return c;
}

}  // namespace servelab::sim::testing
