// Issue 30 §1: goodput done right. The SLO search against a stand-in engine of known capacity: a
// continuous-batching server simulated request by request (Poisson arrivals for a request-rate run, a closed
// loop for a concurrency run), so saturation, queueing and per-request SLO misses come from the arrivals,
// not from a hand-written curve. Its answers are checked against a dense scan of the same stand-in.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <random>

#include "servelab/tune/load/load.h"
#include "test_study.h"

namespace servelab::tune {
namespace {

/// A continuous-batching engine: at most `max_batch` requests run; each step emits one token for each
/// running request and takes `step_base_s + step_per_req_s × running`; a request is admitted (FCFS) at a
/// step boundary, its first token ends its first step, it completes after `output_tokens` tokens.
/// Capacity: max_batch ÷ (output_tokens × step time at a full batch) req/s.
struct BatchServer {
  int max_batch = 64;
  int output_tokens = 100;
  int input_tokens = 200;  ///< counted in total tok/s only (the prefill is in the first step)
  double step_base_s = 0.010;
  double step_per_req_s = 0.0005;

  double capacity_req_s() const {
    return max_batch / (output_tokens * (step_base_s + step_per_req_s * max_batch));
  }

  /// What bench serve prints for `n` requests: Poisson arrivals at `rate` (seeded) when rate > 0, else a
  /// closed loop of `concurrency`. Per-request goodput counts TTFT ≤ ttft_slo_ms and TPOT ≤ tpot_slo_ms.
  std::map<std::string, double> run(int n, double rate, int concurrency, double ttft_slo_ms,
                                    double tpot_slo_ms) const {
    std::vector<double> arrival(n, 0), first(n, -1), done(n, -1);
    std::vector<int> emitted(n, 0);
    std::mt19937_64 rng(7);
    std::exponential_distribution<double> gap(rate > 0 ? rate : 1);
    if (rate > 0)
      for (int i = 1; i < n; ++i) arrival[i] = arrival[i - 1] + gap(rng);
    std::deque<int> queue;
    std::vector<int> running;
    int issued = 0, completed = 0;
    double t = 0;
    if (rate <= 0)
      for (; issued < std::min(concurrency, n); ++issued) queue.push_back(issued);
    while (completed < n) {
      if (rate > 0)
        for (; issued < n && arrival[issued] <= t; ++issued) queue.push_back(issued);
      while (!queue.empty() && static_cast<int>(running.size()) < max_batch) {
        running.push_back(queue.front());
        queue.pop_front();
      }
      if (running.empty()) {
        t = arrival[issued];
        continue;
      }
      t += step_base_s + step_per_req_s * static_cast<double>(running.size());
      std::vector<int> still;
      for (int i : running) {
        if (first[i] < 0) first[i] = t;
        if (++emitted[i] < output_tokens) {
          still.push_back(i);
          continue;
        }
        done[i] = t;
        ++completed;
        if (rate <= 0 && issued < n) arrival[issued] = t, queue.push_back(issued++);
      }
      running = std::move(still);
    }
    std::vector<double> ttft;
    double tpot_sum = 0, e2el_sum = 0, good = 0;
    for (int i = 0; i < n; ++i) {
      const double tf = (first[i] - arrival[i]) * 1000,
                   tp = (done[i] - first[i]) * 1000 / (output_tokens - 1);
      ttft.push_back(tf);
      tpot_sum += tp;
      e2el_sum += (done[i] - arrival[i]) * 1000;
      if (tf <= ttft_slo_ms && tp <= tpot_slo_ms) ++good;
    }
    double early_e2el_ms = 0, backlog = 0;  // the first half by arrival (arrivals are in index order)
    const int half = std::max(1, n / 2);
    for (int i = 0; i < half; ++i) early_e2el_ms += (done[i] - arrival[i]) * 1000 / half;
    for (int i = 0; i < n; ++i) backlog += done[i] > arrival[n - 1] ? 1 : 0;
    double ttft_drift_s = 0;  // median TTFT of the last quarter of arrivals minus the first quarter's
    if (rate > 0 && n >= 8) {
      const int q = n / 4;
      auto median = [&](int from) {
        std::vector<double> v(ttft.begin() + from, ttft.begin() + from + q);
        std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
        return v[v.size() / 2] / 1000;
      };
      ttft_drift_s = median(n - q) - median(0);
    }
    std::sort(ttft.begin(), ttft.end());
    const double pos = 0.99 * (n - 1);  // numpy's linear percentile, as bench serve
    const size_t k = static_cast<size_t>(pos);
    const double p99 = ttft[k] + (k + 1 < ttft.size() ? (pos - k) * (ttft[k + 1] - ttft[k]) : 0);
    double mean_ttft = 0;
    for (double x : ttft) mean_ttft += x / n;
    const double duration = *std::max_element(done.begin(), done.end());
    return {{"Successful requests", n},
            {"Benchmark duration (s)", duration},
            {"Total generated tokens", double(n) * output_tokens},
            {"Request throughput (req/s)", n / duration},
            {"Request goodput (req/s)", good / duration},
            {"Output token throughput (tok/s)", double(n) * output_tokens / duration},
            {kArrivalSpanMetric, arrival[n - 1] - arrival[0]},
            {kEarlyE2elMetric, early_e2el_ms},
            {kBacklogAtLastArrivalMetric, backlog},
            {kTtftDriftMetric, ttft_drift_s},
            {"Total Token throughput (tok/s)", double(n) * (input_tokens + output_tokens) / duration},
            {"P99 TTFT (ms)", p99},
            {"Mean TTFT (ms)", mean_ttft},
            {"Mean TPOT (ms)", tpot_sum / n},
            {"Mean E2EL (ms)", e2el_sum / n}};
  }
};

/// Value of `flag` in args ("" when absent).
std::string arg(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return args[i + 1];
  return "";
}

/// The stand-in as a trial runner: reads --request-rate / --max-concurrency, --num-prompts and --goodput
/// from each scenario's args; counts runs and records the prompts of each.
TrialRunner standin(const BatchServer& server, std::vector<int>* prompts = nullptr) {
  return [=](const TrialRequest& req) {
    TrialOutcome out;
    for (const auto& sc : req.scenarios) {
      const std::string rate = arg(sc.args, "--request-rate"), conc = arg(sc.args, "--max-concurrency");
      const int n = std::stoi(arg(sc.args, "--num-prompts"));
      if (prompts) prompts->push_back(n);
      double ttft_slo = 1e18, tpot_slo = 1e18;
      for (size_t i = 0; i + 1 < sc.args.size(); ++i) {
        if (sc.args[i] != "--goodput") continue;
        const std::string kv = sc.args[i + 1];
        const double v = std::stod(kv.substr(kv.find(':') + 1));
        (kv.rfind("ttft", 0) == 0 ? ttft_slo : tpot_slo) = v;
      }
      ScenarioResult r;
      r.scenario_id = sc.id;
      // Neither flag: every request at once (bench serve's default rate, inf).
      r.metrics = server.run(n, rate.empty() ? 0 : std::stod(rate), conc.empty() ? n : std::stoi(conc),
                             ttft_slo, tpot_slo);
      out.scenarios.push_back(r);
    }
    return out;
  };
}

/// The small test study with scenario s1 at `prompts` prompts and `slo` as its [slo] section.
Study study_with(int prompts, const std::string& slo) {
  std::string text = testing::kSmallStudy;
  const std::string from = "\"--num-prompts\", \"10\"]";
  text.replace(text.find(from), from.size(), fmt::format("\"--num-prompts\", \"{}\"]", prompts));
  return parse_study(text + "\n[slo]\n" + slo, "small.toml", "/data");
}

SloResult search(const Study& s, const BatchServer& server, std::vector<int>* prompts = nullptr) {
  Evaluator ev(s, standin(server, prompts), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  SloResult r = slo_search(s, ev, CandidateConfig{"a", {}});
  if (getenv("SLO_DEBUG")) {
    for (const auto& p : r.probes)
      fmt::print("{:>6} {:>8g} n={:<5} {} g={:.3f} inflight={:.1f} sat={} short={} sup={} slo0={:.1f}\n",
                 p.step, p.value, p.num_prompts, p.passed ? "pass" : "fail", p.goodput_req_s, p.in_flight,
                 p.saturated, p.short_run, p.superseded,
                 p.slo_values_ms.empty() ? 0.0 : p.slo_values_ms.begin()->second);
    fmt::print("found={} max_passing={} goodput={} at {} note={}\n\n", r.found, r.max_passing,
               r.request_goodput_req_s, r.goodput_at, r.note);
  }
  return r;
}

/// The most request goodput any steady rate-run of `n` prompts serves within the SLOs, over rates spaced 1%
/// apart in [lo, hi] req/s: the stand-in's true answer, by brute force.
double scanned_goodput(const BatchServer& server, int n, double lo, double hi, double ttft_slo,
                       double tpot_slo,
                       const std::function<bool(const std::map<std::string, double>&)>& meets) {
  double best = 0;
  for (double x = lo; x <= hi; x *= 1.01) {
    const auto m = server.run(n, x, 0, ttft_slo, tpot_slo);
    const double keeping_up = (n - 1) / m.at(kArrivalSpanMetric) * m.at(kEarlyE2elMetric) / 1000;
    if (m.at(kBacklogAtLastArrivalMetric) - keeping_up > std::max(0.05, 3 * std::sqrt(keeping_up) / n) * n ||
        m.at(kTtftDriftMetric) > 0.05 * m.at(kArrivalSpanMetric) / 2)
      continue;  // saturated (the search's rule)
    if (meets(m)) best = std::max(best, m.at("Request goodput (req/s)"));
  }
  return best;
}

TEST(SloSearchStandIn, TheStandInHasTheCapacityItIsBuiltWith) {
  // 64 ÷ (100 × (10 + 0.5 × 64) ms) = 15.24 req/s; a closed loop of 128 (past the batch) serves exactly that
  // once the batch is full, and a Poisson stream at 30 req/s is served no faster.
  const BatchServer server;
  EXPECT_NEAR(server.capacity_req_s(), 15.238, 1e-3);
  const auto closed = server.run(4000, 0, 128, 1e18, 1e18);
  EXPECT_NEAR(closed.at("Request throughput (req/s)"), server.capacity_req_s(),
              0.02 * server.capacity_req_s());
  const auto flood = server.run(4000, 30, 0, 1e18, 1e18);
  EXPECT_LT(flood.at("Request throughput (req/s)"), 1.01 * server.capacity_req_s());
  const auto light = server.run(2000, 5, 0, 1e18, 1e18);
  EXPECT_NEAR(light.at("Request throughput (req/s)"), 5, 0.25);
}

TEST(SloSearchStandIn, ASaturatedBurstNeverMeetsTheSlos) {
  // Issue 30's case: 300 prompts, p99 TTFT ≤ 20 s (loose): a burst at 128 req/s offered "meets" it while the
  // server serves ~15 req/s. The search reads saturation as over capacity, so the highest passing rate and
  // the goodput lie at the capacity (15.24 req/s), not at the burst.
  const BatchServer server;
  const Study s = study_with(300, "p99_ttft_ms = 20000\n");
  const auto burst = server.run(300, 128, 0, 20000, 1e18);
  ASSERT_LE(burst.at("P99 TTFT (ms)"), 20000);                   // the old false pass
  ASSERT_LT(burst.at("Request throughput (req/s)"), 0.2 * 128);  // served
  const SloResult r = search(s, server);
  ASSERT_TRUE(r.found) << r.note;
  ASSERT_TRUE(r.goodput_found) << r.note;
  EXPECT_LE(r.max_passing, server.capacity_req_s() * 1.05);
  EXPECT_GE(r.max_passing, server.capacity_req_s() * 0.85);
  EXPECT_LE(r.request_goodput_req_s, server.capacity_req_s());
  for (const auto& p : r.probes)
    if (p.value >= 2 * server.capacity_req_s()) {
      EXPECT_TRUE(p.saturated || p.superseded || !p.passed) << p.value;
      EXPECT_FALSE(p.steady() && p.passed) << p.value;
    }
}

TEST(SloSearchStandIn, GoodputPeaksBelowTheHighestPassingRate) {
  // Mean TPOT ≤ 30 ms holds up to ~40 running (10 + 0.5 × 40 ms): the run as a whole meets it at a rate
  // where half its requests miss 30 ms each, so goodput peaks lower. The search finds the peak within its
  // tolerance of the scanned maximum, and reports it below the highest passing rate.
  const BatchServer server;
  const Study s = study_with(2000, "p99_ttft_ms = 2000\nmean_tpot_ms = 30\nmax_runs = 30\n");
  const SloResult r = search(s, server);
  ASSERT_TRUE(r.found) << r.note;
  ASSERT_TRUE(r.goodput_found) << r.note;
  EXPECT_LT(r.goodput_at, r.max_passing / 1.05);
  const auto at_edge = server.run(2000, r.max_passing, 0, 2000, 30);
  EXPECT_GT(r.request_goodput_req_s, 1.2 * at_edge.at("Request goodput (req/s)"));
  const double truth = scanned_goodput(server, 2000, 2, 20, 2000, 30, [](const auto& m) {
    return m.at("P99 TTFT (ms)") <= 2000 && m.at("Mean TPOT (ms)") <= 30;
  });
  EXPECT_GE(r.request_goodput_req_s, truth / 1.05) << "scanned " << truth;
  // Above the scan only by the sampling of a longer run (the search may run more prompts than the scan's).
  EXPECT_LE(r.request_goodput_req_s, truth * 1.02);
  bool narrowed = false;
  for (const auto& p : r.probes) narrowed = narrowed || p.step == "goodput";
  EXPECT_TRUE(narrowed);
}

// Out of runs while narrowing the goodput peak, a passing run that served more goodput than the answer but
// does not count (too short for its load) is named in the note: the peak may lie there (new-user trial:
// 3.88 req/s reported at 7.619 with a short run at 5.521 that served 5.15 unmentioned).
TEST(SloSearchStandIn, OutOfRunsTheNoteNamesAShortRunThatServedMore) {
  const BatchServer server;
  const SloResult r =
      search(study_with(200, "p99_ttft_ms = 2000\nmean_tpot_ms = 30\nmax_runs = 10\n"), server);
  ASSERT_TRUE(r.goodput_found) << r.note;
  EXPECT_EQ(
      r.note,
      "stopped at max_runs = 10 while narrowing the goodput peak near 8 req/s; the run at 10.21 req/s served "
      "9.66 req/s of goodput but does not count (too short for its load): the peak may lie there");
  bool found = false;
  for (const auto& p : r.probes)
    if (p.value == 10.21 && p.passed && p.short_run && !p.superseded) {
      found = true;
      EXPECT_GT(p.goodput_req_s, r.request_goodput_req_s);
    }
  EXPECT_TRUE(found);
}

TEST(SloSearchStandIn, RateAndConcurrencyGiveTheSameGoodput) {
  // Capacity binds (TPOT at a full batch, 42 ms, is under its 50 ms bound): stepping by request rate and by
  // concurrency must find the same goodput within the search's tolerance, near the capacity.
  const BatchServer server;
  const std::string slo = "p99_ttft_ms = 2000\nmean_tpot_ms = 50\nmax_runs = 30\n";
  const SloResult by_rate = search(study_with(1000, slo), server);
  const SloResult by_conc = search(study_with(1000, slo + "search = \"concurrency\"\n"), server);
  ASSERT_TRUE(by_rate.goodput_found) << by_rate.note;
  ASSERT_TRUE(by_conc.goodput_found) << by_conc.note;
  EXPECT_NEAR(by_rate.request_goodput_req_s / by_conc.request_goodput_req_s, 1, 0.05)
      << by_rate.request_goodput_req_s << " vs " << by_conc.request_goodput_req_s;
  EXPECT_GE(by_conc.request_goodput_req_s, 0.9 * server.capacity_req_s());
  EXPECT_GE(by_rate.request_goodput_req_s, 0.9 * server.capacity_req_s());
}

TEST(SloSearchStandIn, TheLocalGoodputPhaseStartsWhereTheTwinsPeakLies) {
  // The twin (the same server) peaks at goodput_at ≈ 0.79 × its highest passing rate; the real search
  // (a server 10% slower per step) first looks for its peak at that share of its own highest passing rate,
  // and reaches its peak in fewer runs than without the prior.
  const BatchServer twin_server;
  BatchServer real_server;
  real_server.step_base_s *= 1.1, real_server.step_per_req_s *= 1.1;
  const Study s = study_with(2000, "p99_ttft_ms = 2000\nmean_tpot_ms = 33\nmax_runs = 30\n");
  Evaluator twin(s, standin(twin_server), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  Evaluator real(s, standin(real_server), RunnerKind::kLocal, nullptr, {}, nullptr, nullptr, {});
  real.set_load_guide(&twin);
  const SloResult g = slo_search(s, twin, CandidateConfig{"a", {}});
  const SloResult r = slo_search(s, real, CandidateConfig{"a", {}});
  ASSERT_TRUE(g.goodput_found && r.goodput_found) << g.note << r.note;
  ASSERT_LT(g.goodput_at, g.max_passing / 1.05);
  const SloProbe* first_goodput = nullptr;
  for (const auto& p : r.probes)
    if (p.step == "goodput" && !first_goodput) first_goodput = &p;
  ASSERT_NE(first_goodput, nullptr);
  EXPECT_NEAR(first_goodput->value, r.max_passing * g.goodput_at / g.max_passing, 0.01 * r.max_passing);
  const SloResult unguided = search(s, real_server);
  EXPECT_NEAR(r.request_goodput_req_s / unguided.request_goodput_req_s, 1, 0.05);
  EXPECT_LT(r.runs, unguided.runs);
}

TEST(SloSearchStandIn, AShortRunIsRerunLongEnoughForItsLoad) {
  // 100 prompts: at 8 req/s with ~3 s E2EL about 24 requests are in flight, so a steady run needs ≥ 240
  // prompts; concurrency runs are planned at 10 × the concurrency from the start.
  const BatchServer server;
  std::vector<int> prompts;
  const SloResult r = search(study_with(100, "p99_ttft_ms = 2000\nmean_tpot_ms = 50\n"), server, &prompts);
  ASSERT_TRUE(r.found) << r.note;
  bool longer = false;
  for (const auto& p : r.probes) {
    if (p.superseded) {
      EXPECT_LT(p.num_prompts, 10 * p.in_flight);
    }
    if (p.steady() && p.passed) {
      EXPECT_GE(p.num_prompts + 0.5, 10 * p.in_flight) << p.value;
    }
    longer = longer || p.step == "longer";
  }
  EXPECT_TRUE(longer);
  EXPECT_GT(*std::max_element(prompts.begin(), prompts.end()), 100);
  std::vector<int> conc_prompts;
  const SloResult c =
      search(study_with(100, "p99_ttft_ms = 2000\nsearch = \"concurrency\"\n"), server, &conc_prompts);
  for (const auto& p : c.probes) {
    EXPECT_GE(p.num_prompts, std::max(100.0, 10 * p.value)) << p.value;
    EXPECT_LE(p.num_prompts, std::max(100.0, 10 * p.value * 1.1)) << p.value;  // two significant digits
    EXPECT_NE(p.step, "longer");
  }
}

TEST(SloSearchStandIn, AnInvalidRunStopsTheSearchWithoutAVerdict) {
  // The second run's timing cannot be trusted (a host too slow): the search neither reads it as "fails the
  // SLOs" nor brackets down from it; it stops, finds nothing, and names the run.
  const Study s = study_with(300, "p99_ttft_ms = 2000\n");
  const BatchServer server;
  int calls = 0;
  const TrialRunner inner = standin(server);
  const TrialRunner runner = [&](const TrialRequest& req) {
    if (++calls == 2) {
      TrialOutcome out;
      out.status = TrialStatus::kInvalid;
      out.reason = "the client fell behind its schedule";
      return out;
    }
    return inner(req);
  };
  Evaluator ev(s, runner, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  const SloResult r = slo_search(s, ev, CandidateConfig{"a", {}});
  EXPECT_FALSE(r.found);
  EXPECT_FALSE(r.goodput_found);
  ASSERT_EQ(r.runs, 2);
  EXPECT_EQ(r.probes[1].status, TrialStatus::kInvalid);
  EXPECT_NE(r.note.find("the run at 2 req/s ended invalid: the client fell behind its schedule"),
            std::string::npos)
      << r.note;
}

TEST(SloSearchStandIn, MeasuredGoodputCarriesTheRepeatsConfidenceInterval) {
  // Two repeats on a measuring target: repeat r serves (1 + 0.04 r) × the stand-in's goodput. The goodput
  // objective is their mean with Student's 95% CI (t = 12.706 at 1 degree of freedom), not one number.
  Study s =
      study_with(1000, "p99_ttft_ms = 2000\nmean_tpot_ms = 50\n\n[[objectives]]\nkind = \"slo_goodput\"\n");
  s.repeats = 2;
  const BatchServer server;
  const TrialRunner inner = standin(server);
  const TrialRunner runner = [&](const TrialRequest& req) {
    TrialOutcome out = inner(req);
    for (auto& sc : out.scenarios) sc.metrics["Request goodput (req/s)"] *= 1 + 0.04 * req.repeat;
    return out;
  };
  Evaluator ev(s, runner, RunnerKind::kLocal, nullptr, {}, nullptr, nullptr, {});
  const SloResult r = slo_search(s, ev, CandidateConfig{"a", {}});
  ASSERT_TRUE(r.goodput_found) << r.note;
  ASSERT_EQ(r.goodput_repeats_req_s.size(), 2u);
  const double g0 = r.goodput_repeats_req_s[0];
  EXPECT_NEAR(r.goodput_repeats_req_s[1], 1.04 * g0, 1e-9);
  EXPECT_NEAR(r.request_goodput_req_s, 1.02 * g0, 1e-9);
  const Evaluation e = ev.evaluate(CandidateConfig{"a", {}}, s.objective.scenarios, "search");
  ASSERT_TRUE(e.feasible) << e.reason;
  EXPECT_EQ(e.objective.n, 2);
  EXPECT_NEAR(e.objective.mean, 1.02 * g0, 1e-9);
  EXPECT_NEAR(e.objective.ci95_half, 12.706 * (0.04 * g0 / std::sqrt(2.0)) / std::sqrt(2.0), 1e-3 * g0);
}

// The twin's goodput band comes from two more SLO searches (bounds shifted by the latency bands), which are
// not stored trials: a resumed run is given the bands the run stored and reuses the one computed around the
// same goodput instead of searching again (a --resume of a finished SLO study took 49 s for nothing new).
TEST(SloSearchStandIn, AStoredGoodputBandIsReusedNotSearchedAgain) {
  const Study s = study_with(1000, "p99_ttft_ms = 2000\nmean_tpot_ms = 50\n");
  const BatchServer server;
  int runs = 0;
  const TrialRunner inner = standin(server);
  const TrialRunner runner = [&](const TrialRequest& req) {
    ++runs;
    TrialOutcome out = inner(req);
    for (auto& sc : out.scenarios) sc.metrics[kBandTtftMetric] = sc.metrics[kBandTpotMetric] = 20;
    return out;
  };
  Evaluator first(s, runner, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  const SloResult a = slo_search(s, first, CandidateConfig{"a", {}});
  ASSERT_TRUE(a.goodput_band_pct.has_value()) << a.note;
  const GoodputBandRecord* stored = first.goodput_band(a.config_key, a.scenario);
  ASSERT_NE(stored, nullptr);
  const int with_band_searches = runs;
  runs = 0;
  Evaluator resumed(s, runner, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  resumed.set_goodput_bands({*stored});
  const SloResult b = slo_search(s, resumed, CandidateConfig{"a", {}});
  EXPECT_EQ(b.request_goodput_req_s, a.request_goodput_req_s);
  EXPECT_EQ(b.goodput_band_pct, a.goodput_band_pct);
  EXPECT_EQ(b.goodput_low_req_s, a.goodput_low_req_s);
  EXPECT_LT(runs, with_band_searches);  // the search's own probes only
  EXPECT_EQ(runs, static_cast<int>(a.probes.size()));
  // A band an older build stored without the throughput band's floor (±1% here) is widened as a fresh one
  // is: the prediction's ±30% tok/s band at that load.
  GoodputBandRecord narrow = *stored;
  narrow.low_req_s = 0.99 * narrow.goodput_req_s, narrow.high_req_s = 1.01 * narrow.goodput_req_s;
  const TrialRunner wide_tok_s = [&](const TrialRequest& req) {
    TrialOutcome out = runner(req);
    for (auto& sc : out.scenarios) sc.metrics[kBandTokSMetric] = 30;
    return out;
  };
  Evaluator old_store(s, wide_tok_s, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  old_store.set_goodput_bands({narrow});
  const SloResult c = slo_search(s, old_store, CandidateConfig{"a", {}});
  ASSERT_EQ(c.request_goodput_req_s, narrow.goodput_req_s);
  EXPECT_NEAR(c.goodput_low_req_s, 0.7 * c.request_goodput_req_s, 1e-9);
  EXPECT_NEAR(c.goodput_high_req_s, 1.3 * c.request_goodput_req_s, 1e-9);
  EXPECT_NEAR(*c.goodput_band_pct, 30, 1e-9);
}

TEST(SloSearchStandIn, SaturationToleranceIsThreeSigmaOfThePoissonSpan) {
  EXPECT_DOUBLE_EQ(saturation_tolerance(100), 0.3);
  EXPECT_DOUBLE_EQ(saturation_tolerance(900), 0.1);
  EXPECT_DOUBLE_EQ(saturation_tolerance(10000), 0.1);
}

TEST(SloSearchStandIn, LoadPointTagsCarryTheRunLength) {
  const LoadPoint lp{LoadKind::kRequestRate, 2.5, 2400};
  EXPECT_EQ(lp.tag(), "r2.5n2400");
  EXPECT_EQ(lp.text(), "2.5 req/s, 2400 prompts");
  const auto split = split_load_scenario_id("s1@r2.5n2400");
  ASSERT_TRUE(split);
  EXPECT_EQ(split->first, "s1");
  EXPECT_DOUBLE_EQ(split->second.value, 2.5);
  EXPECT_EQ(split->second.num_prompts, 2400);
  EXPECT_FALSE(split_load_scenario_id("s1@r2.5n"));
  EXPECT_FALSE(split_load_scenario_id("s1@r2.5n-3"));
  EXPECT_FALSE(split_load_scenario_id("s1@rnan"));
  const Study s = study_with(300, "p99_ttft_ms = 2000\n");
  const Scenario sc = load_scenario(s, "s1@c16n160");
  EXPECT_EQ(arg(sc.args, "--num-prompts"), "160");
  EXPECT_EQ(arg(sc.args, "--max-concurrency"), "16");
  EXPECT_EQ(std::count(sc.args.begin(), sc.args.end(), "--num-prompts"), 1);
}

}  // namespace
}  // namespace servelab::tune
