// The twin served in real time (sim serve): OnlineTwin drives the discrete-event Simulator of simulate.cc
// tick by tick in virtual time; the caller's clock decides when a token leaves.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "sim/event_loop.h"
#include "sim/simulator.h"

namespace servelab::sim {

// The same EventLoop as Simulator::run; the client is the caller's submit(), and a token leaves when the
// caller's clock reaches its emission time (first_token_ms after its step ends).
struct OnlineTwin::Impl {
  /// A token (index >= 0) or an engine abort (index -1) due at t_s; seq keeps equal times in order.
  struct Pending {
    double t_s;
    std::uint64_t seq;
    int id, index;
    bool operator>(const Pending& o) const { return t_s != o.t_s ? t_s > o.t_s : seq > o.seq; }
  };
  detail::Simulator sim;
  PredictionContext context;
  std::vector<detail::Simulator::Emission> sink;
  std::deque<std::pair<int, double>> arrivals;  // (internal id, send time) not yet sent to the API server
  detail::EventLoop loop;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending;  // emitted, not yet due
  std::uint64_t next_seq = 0;
  std::unordered_map<std::uint64_t, int> by_external;
  std::vector<std::uint64_t> external;  // internal id -> caller's id
  std::vector<char> dropped;            // internal id -> cancelled by the caller (its tokens never leave)

  Impl(const engines::ResolvedLaunch& l, const hardware::ClusterSpec& c, PredictionContext ctx)
      : sim(l, c, ctx.calibration, 0),
        context(std::move(ctx)),
        loop(sim,
             detail::LoopClient{[this](double t, int) { send_until(t); }, [this] { return next_send(); }}) {}

  void send_until(double t) {
    while (!arrivals.empty() && arrivals.front().second <= t) {
      sim.send(arrivals.front().first, arrivals.front().second);
      arrivals.pop_front();
    }
  }
  double next_send() const {
    return arrivals.empty() ? std::numeric_limits<double>::infinity() : arrivals.front().second;
  }
  /// Moves what the steps emitted into the queue of tokens not yet due.
  void collect() {
    for (const auto& e : sink) {
      if (dropped[e.id]) continue;
      if (e.first < 0) pending.push({e.t_s, next_seq++, e.id, -1});
      for (int k = 0; k < e.count; ++k) pending.push({e.t_s, next_seq++, e.id, e.first + k});
    }
    sink.clear();
  }
  double next_due() const {
    return pending.empty() ? std::numeric_limits<double>::infinity() : pending.top().t_s;
  }
};

OnlineTwin::OnlineTwin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnlineTwin::~OnlineTwin() = default;

std::variant<std::unique_ptr<OnlineTwin>, PredictedFailure> OnlineTwin::create(
    const engines::LaunchConfig& engine, const hardware::ClusterSpec& cluster, const model::ModelSpec& model,
    const std::optional<CalibrationTable>& calibration) {
  if (auto f = gpu_not_modelled(cluster)) return *f;
  auto resolved = engines::resolve_launch(engine, model, cluster);
  if (const auto* f = std::get_if<engines::LaunchFailure>(&resolved))
    return PredictedFailure{f->message, detail::failure_kind(*f)};
  const auto& launch = std::get<engines::ResolvedLaunch>(resolved);
  WorkloadOptions options;
  options.calibration = calibration;
  auto impl = std::make_unique<Impl>(launch, cluster, detail::make_context(launch, cluster, options));
  if (!impl->sim.plan().fits)
    return PredictedFailure{impl->sim.plan().failure, PredictedFailure::Kind::kOutOfMemory};
  impl->sim.set_sink(&impl->sink, /*record_timings=*/false);
  return std::unique_ptr<OnlineTwin>(new OnlineTwin(std::move(impl)));
}

std::optional<std::string> OnlineTwin::submit(std::uint64_t id, int prompt_tokens, int output_len,
                                              double now_s) {
  if (prompt_tokens < 1 || output_len < 1)
    throw std::invalid_argument(fmt::format("request {}: prompt and output tokens must be >= 1", id));
  auto& im = *impl_;
  const int internal = im.sim.add_request(prompt_tokens, output_len, prompt_tokens);
  im.external.push_back(id);
  im.dropped.push_back(0);
  // Refusals (context length; SGLang's KV-pool bound) are decided at arrival, as the engine does:
  // Simulator::send_if_refused records the failure and returns its message.
  if (auto no = im.sim.send_if_refused(internal, now_s)) return no;
  im.by_external[id] = internal;
  // Sends stay in order: one stamped earlier than the last (a late caller) is sent with it.
  im.arrivals.emplace_back(internal,
                           im.arrivals.empty() ? now_s : std::max(now_s, im.arrivals.back().second));
  return std::nullopt;
}

std::optional<std::string> OnlineTwin::refusal(int prompt_tokens, int output_len) const {
  if (auto no = impl_->sim.refusal(prompt_tokens, output_len)) return std::move(no->message);
  return std::nullopt;
}

int OnlineTwin::admitted_output(int prompt_tokens, int output_len) const {
  return impl_->sim.admitted_output(prompt_tokens, output_len);
}

void OnlineTwin::cancel(std::uint64_t id) {
  auto& im = *impl_;
  auto it = im.by_external.find(id);
  if (it == im.by_external.end()) return;
  const int internal = it->second;
  im.by_external.erase(it);
  im.dropped[internal] = 1;
  for (auto a = im.arrivals.begin(); a != im.arrivals.end(); ++a) {
    if (a->first == internal) {
      im.arrivals.erase(a);
      return;
    }
  }
  im.loop.cancel(internal);
}

void OnlineTwin::advance_to(double t_s, const std::function<void(std::uint64_t, int, double)>& emit) {
  auto& im = *impl_;
  im.loop.run_until(t_s);
  im.collect();
  while (!im.pending.empty() && im.pending.top().t_s <= t_s) {
    const auto e = im.pending.top();
    im.pending.pop();
    if (im.dropped[e.id]) continue;  // cancelled (possibly by `emit` itself) after the step emitted it
    const std::uint64_t ext = im.external[e.id];
    if (e.index < 0) im.by_external.erase(ext);  // aborted by the engine: more KV than a rank holds
    emit(ext, e.index, e.t_s);
  }
}

double OnlineTwin::next_event_s() {
  return std::min(impl_->loop.next_event_s(), impl_->next_due());
}

int OnlineTwin::max_model_len() const {
  return impl_->sim.launch().max_model_len;
}

TwinView OnlineTwin::view() {
  return impl_->sim.view();
}

std::vector<EngineLiveMetrics> OnlineTwin::live_metrics() const {
  return impl_->sim.live_metrics();
}

bool OnlineTwin::prefix_caching() const {
  return impl_->sim.launch().prefix_caching;
}

bool OnlineTwin::speculative() const {
  return impl_->sim.launch().speculative.has_value();
}

const PredictionContext& OnlineTwin::context() const {
  return impl_->context;
}

}  // namespace servelab::sim
