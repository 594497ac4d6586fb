// run_load: the open-loop streaming load generator (one io_context per thread, keep-alive pool).
// This file: run_load / run_sessions and execute (threads, preconnect, t = 0); Run and Conn are in
// load_detail.h, Worker (one I/O thread) in load_worker.h.
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <span>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "client/load_detail.h"
#include "client/load_worker.h"
#include "client/os_limits.h"
#include "client/preconnect.h"
#include "servelab/client/client.h"
#include "servelab/client/request.h"
#include "servelab/client/session.h"

namespace servelab::client {
namespace detail {
namespace {

template <class Stream>
void execute(Run<Stream>& run, std::size_t num_threads, const ProgressCallback& progress,
             std::stop_token stop, std::atomic<bool>& interrupted) {
  const std::size_t n = run.outputs.size();
  std::vector<std::vector<std::size_t>> parts(num_threads);
  std::vector<std::size_t> owned(num_threads, 0);
  if (run.plan) {  // a session's turns all go to one worker (its next turn is built where the last one ended)
    for (std::size_t s = 0; s < run.plan->sessions.size(); ++s) {
      parts[s % num_threads].push_back(run.plan->sessions[s].front());
      owned[s % num_threads] += run.plan->sessions[s].size();
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) parts[i % num_threads].push_back(i);
    for (std::size_t w = 0; w < num_threads; ++w) owned[w] = parts[w].size();
  }
  std::vector<std::unique_ptr<Worker<Stream>>> workers;
  for (std::size_t w = 0; w < num_threads; ++w)
    workers.push_back(std::make_unique<Worker<Stream>>(run, std::move(parts[w]), owned[w]));

  std::mutex done_mu;
  std::condition_variable done_cv;
  std::size_t running = num_threads;
  // A stop requested before the run: no worker may dispatch (the callback below then marks all not sent).
  if (stop.stop_requested()) run.stop_requested = true;
  // Pre-opened connections: each worker's share in proportion to the requests it sends (at most that many).
  // t = 0 is when every worker has finished its share (a std::barrier: no worker dispatches before).
  std::vector<std::size_t> pre_share(num_threads, 0), pre_failed(num_threads, 0);
  std::vector<std::string> pre_error(num_threads);
  for (std::size_t w = 0; w < num_threads; ++w)
    pre_share[w] = preconnect_share(run.options.preconnect, workers[w]->num_requests(), n);
  const Clock::time_point pre_begin = Clock::now();
  Clock::time_point ready;  // every worker has finished its preconnect share
  std::barrier start_line(static_cast<std::ptrdiff_t>(num_threads), [&run, &ready]() noexcept {
    ready = Clock::now();
    run.t0 = run.options.start_at.value_or(ready);
  });
  std::vector<std::thread> threads;
  std::atomic<int> priority_error{0};
  for (std::size_t k = 0; k < num_threads; ++k) {
    threads.emplace_back([&, k, wp = workers[k].get()] {
      if (run.options.realtime_priority > 0) {
        sched_param sp{};
        sp.sched_priority = run.options.realtime_priority;
        if (const int err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp)) priority_error = err;
      }
      if (pre_share[k] > 0) pre_failed[k] = wp->preconnect(pre_share[k], pre_error[k]);
      start_line.arrive_and_wait();
      wp->run_loop();
      std::lock_guard lock(done_mu);
      --running;
      done_cv.notify_all();
    });
  }
  {
    std::stop_callback on_stop(stop, [&] {
      if (run.completed.load() < n) interrupted = true;
      for (auto& w : workers) w->request_stop();
    });
    std::unique_lock lock(done_mu);
    while (running > 0) {
      done_cv.wait_for(lock, std::chrono::milliseconds(100));
      if (progress) {
        lock.unlock();
        progress(run.completed.load() - run.cancelled.load(), n);
        lock.lock();
      }
    }
  }
  for (auto& t : threads) t.join();
  if (progress) progress(run.completed.load() - run.cancelled.load(), n);
  run.preconnected = preconnect_summary(pre_share, pre_failed, pre_error, run.warnings);
  run.preconnect_s =
      run.options.preconnect > 0 ? std::chrono::duration<double>(ready - pre_begin).count() : 0.0;
  if (const int err = priority_error.load()) {
    run.warnings.push_back("realtime priority " + std::to_string(run.options.realtime_priority) +
                           " (SCHED_FIFO) not set for the client I/O threads: " + std::strerror(err));
  }
}

}  // namespace
}  // namespace detail

namespace {

namespace asio = boost::asio;
using detail::build_http_request;
using detail::Clock;
using detail::ParsedUrl;
using metrics::FailureKind;
using metrics::RequestOutput;

// Each request's HTTP bytes, and its output record's fields known before it is sent.
std::vector<std::string> prepare_requests(const ClientOptions& options, const ParsedUrl& url,
                                          const std::string& api_key,
                                          std::span<const PlannedRequest> requests,
                                          std::span<const double> schedule_s, LoadResult& result) {
  const std::size_t n = requests.size();
  result.outputs.resize(n);
  std::vector<std::string> http(n);
  for (std::size_t i = 0; i < n; ++i) {
    http[i] = build_http_request(options, url, api_key, requests[i]);
    RequestOutput& out = result.outputs[i];
    out.prompt_len = requests[i].prompt_len;
    out.dataset_prompt_len = requests[i].prompt_len;
    out.output_len = requests[i].output_len;
    out.request_id = requests[i].request_id;
    out.intended_send_time_s = schedule_s[i];
  }
  return http;
}

// I/O threads: ClientOptions::num_threads (0: one per core), at most one per request (per session).
std::size_t io_thread_count(const ClientOptions& options, std::size_t num_requests, const SessionPlan* plan) {
  std::size_t num_threads = options.num_threads > 0 ? static_cast<std::size_t>(options.num_threads)
                                                    : std::max(1u, std::thread::hardware_concurrency());
  return std::max<std::size_t>(1, std::min(num_threads, plan ? plan->sessions.size() : num_requests));
}

// Every request failed to connect: the host did not resolve (or there is nothing to send).
LoadResult unresolved(LoadResult result, const ParsedUrl& url, const boost::system::error_code& ec,
                      const ProgressCallback& progress) {
  for (auto& out : result.outputs) {
    out.failure = FailureKind::kConnect;
    out.error = "cannot resolve host '" + url.host + "': " + ec.message();
  }
  result.start = Clock::now();
  const std::size_t n = result.outputs.size();
  if (progress) progress(n, n);
  return result;
}

// The shared state of one run before it starts: requests, endpoints, the --max-concurrency semaphore and,
// for sessions, each request's session and turn and the session semaphore.
template <class Stream>
void configure_run(detail::Run<Stream>& run, std::vector<std::string> http,
                   const asio::ip::tcp::resolver::results_type& endpoints, const ParsedUrl& url,
                   const std::string& api_key, const SessionPlan* plan) {
  const ClientOptions& options = run.options;
  run.http = std::move(http);
  run.endpoints = endpoints;
  run.host = url.host;
  run.authority = url.host_header;
  run.limited = options.max_concurrency > 0;
  run.available = options.max_concurrency;
  run.secrets = detail::request_secrets(options, api_key);
  if (run.limited && !plan) {
    run.admit_order.resize(run.schedule.size());
    std::iota(run.admit_order.begin(), run.admit_order.end(), std::size_t{0});
    std::stable_sort(run.admit_order.begin(), run.admit_order.end(),
                     [&](std::size_t a, std::size_t b) { return run.schedule[a] < run.schedule[b]; });
    run.admit_waiting.assign(run.schedule.size(), nullptr);
  }
  if (!plan) return;
  const std::size_t n = run.http.size();
  run.plan = plan;
  run.url = &url;
  run.api_key = api_key;
  run.session_of.assign(n, 0);
  run.turn_of.assign(n, 0);
  for (std::size_t s = 0; s < plan->sessions.size(); ++s) {
    for (std::size_t t = 0; t < plan->sessions[s].size(); ++t) {
      run.session_of[plan->sessions[s][t]] = s;
      run.turn_of[plan->sessions[s][t]] = t;
    }
  }
  run.holds_session_slot.assign(plan->sessions.size(), 0);
  run.sessions_limited = plan->session_concurrency > 0;
  run.sessions_available = plan->session_concurrency;
}

// After the run: t = 0, the duration to the last completion (s), what was not sent, warnings, preconnect.
template <class Stream>
void collect_run(detail::Run<Stream>& run, const std::atomic<bool>& interrupted, LoadResult& result) {
  const Clock::rep last = run.last_completion.load();
  result.warnings = std::move(run.warnings);
  result.preconnected = run.preconnected;
  result.preconnect_s = run.preconnect_s;
  result.start = run.t0;
  result.duration_s =
      last == 0 ? 0.0
                : std::chrono::duration<double>(Clock::time_point(Clock::duration(last)) - run.t0).count();
  result.interrupted = interrupted.load();
  result.num_not_sent = run.not_sent.load();
}

// run_load and run_sessions: `plan` null for independent requests.
LoadResult run_impl(const ClientOptions& options, std::span<const PlannedRequest> requests,
                    std::span<const double> schedule_s, const SessionPlan* plan,
                    const ProgressCallback& progress, std::stop_token stop) {
  using namespace detail;
  validate_load(options, requests.size(), schedule_s);
  const ParsedUrl url = parse_url(options.api_url);
  validate_endpoint_url(url, options.endpoint);
  const std::string api_key = resolve_api_key(options);
  check_connection_limits(schedule_s, options.max_concurrency, options.preconnect);

  LoadResult result;
  const std::size_t n = requests.size();
  std::vector<std::string> http = prepare_requests(options, url, api_key, requests, schedule_s, result);
  std::vector<std::string> reasoning(options.retokenize ? n : 0);
  const std::size_t num_threads = io_thread_count(options, n, plan);

  asio::io_context resolver_io;
  asio::ip::tcp::resolver resolver(resolver_io);
  boost::system::error_code rec;
  auto endpoints = resolver.resolve(url.host, url.port, rec);
  if (rec || n == 0) return unresolved(std::move(result), url, rec, progress);

  std::atomic<bool> interrupted{false};
  if (url.tls) {
    asio::ssl::context ssl(asio::ssl::context::tls_client);
    if (!options.insecure) ssl.set_default_verify_paths();
    Run<SslStream> run(options, schedule_s, result.outputs, reasoning);
    configure_run(run, std::move(http), endpoints, url, api_key, plan);
    run.ssl = &ssl;
    execute(run, num_threads, progress, stop, interrupted);
    collect_run(run, interrupted, result);
  } else {
    Run<asio::ip::tcp::socket> run(options, schedule_s, result.outputs, reasoning);
    configure_run(run, std::move(http), endpoints, url, api_key, plan);
    execute(run, num_threads, progress, stop, interrupted);
    collect_run(run, interrupted, result);
  }
  detail::count_output_tokens(options, reasoning, result, stop);
  return result;
}

}  // namespace

LoadResult run_load(const ClientOptions& options, std::span<const PlannedRequest> requests,
                    std::span<const double> schedule_s, const ProgressCallback& progress,
                    std::stop_token stop) {
  return run_impl(options, requests, schedule_s, nullptr, progress, stop);
}

LoadResult run_sessions(const ClientOptions& options, std::span<const PlannedRequest> requests,
                        const SessionPlan& plan, std::span<const double> session_start_s,
                        const ProgressCallback& progress, std::stop_token stop) {
  const std::vector<double> schedule = detail::session_schedule(requests.size(), plan, session_start_s);
  return run_impl(options, requests, schedule, &plan, progress, stop);
}

}  // namespace servelab::client
