// The Slurm target's runner (submitting side: sbatch, squeue, scancel) and `servelab tune-trial` (node side).
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "servelab/common/paths.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/targets/slurm.h"
#include "servelab/tune/targets/targets.h"
#include "tune/store/wall_clock.h"
#include "tune/targets/local_runner.h"

namespace servelab::tune {

namespace {

namespace fs = std::filesystem;

using detail::CommandResult;

}  // namespace

detail::CommandResult detail::run_command(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return r;
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    return r;
  }
  std::vector<std::string> a = argv;
  std::vector<char*> args;
  for (auto& s : a) args.push_back(s.data());
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(args[0], args.data());
    dprintf(2, "cannot run %s: %s\n", args[0], strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    close(out[0]);
    close(err[0]);
    r.err = "fork failed";
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  bool killed = false;
  while (open_fds > 0) {
    const double left =
        timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      kill(-pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min(left, 0.5) * 1000) + 1) <= 0) continue;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(f.fd, buf, sizeof buf);
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
        continue;
      }
      (&f == &fds[0] ? r.out : r.err).append(buf, static_cast<size_t>(n));
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (killed) r.err += fmt::format("(killed after {:g} s)", timeout_s);
  return r;
}

namespace {

using detail::run_command;

/// The state a trial's Slurm row holds while sbatch runs (its job id is not known yet).
constexpr const char* kSubmitting = "SUBMITTING";

/// Seconds before a kSubmitting row's time a job or output found for it may date from: the controller's,
/// the compute node's or a file server's clock against this host's [a choice].
constexpr double kAdoptSlackS = 60;

/// A job id's number ("1234", an array task "1234_7" → 1234), -1 for anything else.
long job_number(const std::string& id) {
  const auto digits = id.find_first_not_of("0123456789");
  if (id.empty() || digits == 0 || (digits != std::string::npos && id[digits] != '_')) return -1;
  return std::stol(id.substr(0, digits));
}

/// squeue's `%V` ("2026-12-07T23:30:05", the controller's local time) as seconds since the Unix epoch;
/// nullopt for anything else ("N/A", "Unknown").
std::optional<double> slurm_wall_time(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(t);
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) throw std::runtime_error("cannot write " + path.string() + ": " + strerror(errno));
}

/// write_text for a file only its owner may read: the text goes to a new file (O_EXCL, mode 0600 before any
/// byte is written; never an existing file, its mode, ACL or other hard links), renamed over `path` when
/// complete. Throws std::runtime_error naming the path and the system's reason.
void write_private(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());  // a leftover of a killed run
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string() + ": " + strerror(errno));
  auto fail = [&](const std::string& why) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path.string() + ": " + why);
  };
  if (::fchmod(fd, 0600) != 0) fail(strerror(errno));  // exactly 0600, whatever the umask
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(n < 0 ? strerror(errno) : "no byte written");
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const std::string why = strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path.string() + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path.string() + ": " + why);
  }
}

std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (auto& c : s)
    if (c == '\n') c = ' ';
  return s;
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// A job this runner waits for.
struct Active {
  std::size_t index = 0;
  std::string trial_key;
  std::string job_id;
  double wall_submitted_s = 0;
  SlurmJobFiles files;
  std::string state;
  double steady_started_s = 0;
  int unseen_polls = 0;  ///< polls in a row in which neither squeue nor sacct knew the job
  int requeues = 0;
};

/// The runner's state, shared by the copies of the returned std::function.
class SlurmRunner {
 public:
  SlurmRunner(const Study& study, SlurmRunnerOptions o)
      : study_(study), o_(std::move(o)), store_(o_.store_path) {
    if (o_.servelab.empty()) o_.servelab = study_.slurm.servelab;
    if (o_.servelab.empty()) o_.servelab = fs::read_symlink("/proc/self/exe").string();
    out_dir_ = fs::absolute(o_.out_dir);
    job_name_ = "servelab-" + study_.name;
  }

  void run(const std::vector<TrialRequest>& reqs, const TrialDone& done) {
    std::deque<std::size_t> queue;
    std::vector<Active> active;
    const auto stored = store_.slurm_jobs();
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      auto it = stored.find(reqs[i].trial_key);
      if (it == stored.end()) {
        queue.push_back(i);
        continue;
      }
      Active a;  // submitted by an earlier tune (--resume): wait for it, or read how it ended
      a.index = i;
      a.trial_key = reqs[i].trial_key;
      a.job_id = it->second.job_id;
      a.wall_submitted_s = it->second.wall_submitted_s;
      a.files = slurm_job_files(out_dir_ / "slurm", reqs[i].trial_key);
      a.state = it->second.state;
      if (a.job_id.empty()) {  // sbatch ran, its id never written (adopt_unrecorded says which)
        if (adopt_unrecorded(a, reqs[i].config_key)) {
          a.steady_started_s = steady_s() - std::max(0.0, wall_now_s() - a.wall_submitted_s);
          active.push_back(std::move(a));
        } else {
          store_.forget_slurm_job(a.trial_key);
          queue.push_back(i);
        }
        continue;
      }
      a.steady_started_s = steady_s() - std::max(0.0, wall_now_s() - it->second.wall_submitted_s);
      say(fmt::format("slurm: job {} of {} from the earlier run ({}): waiting for it, not submitting again",
                      a.job_id, reqs[i].config_key, a.state));
      active.push_back(std::move(a));
    }
    while (!queue.empty() || !active.empty()) {
      if (stopped()) return cancel(reqs, active, queue, done);
      while (static_cast<int>(active.size()) < study_.slurm.max_parallel && !queue.empty()) {
        const std::size_t index = queue.front();
        queue.pop_front();
        SlurmAllocation alloc;
        try {
          alloc = slurm_allocation(study_, reqs[index]);
        } catch (const std::invalid_argument& e) {  // this trial cannot run here; the others can
          TrialOutcome out;
          out.status = TrialStatus::kRejected;
          out.reason = e.what();
          say(fmt::format("slurm: {} not submitted: {}", reqs[index].config_key, out.reason));
          done(index, std::move(out));
          continue;
        }
        active.push_back(submit(reqs, index, alloc));
      }
      poll_states(active);
      for (auto it = active.begin(); it != active.end();) {
        if (!ended(*it)) {
          ++it;
          continue;
        }
        const std::size_t index = it->index;
        TrialOutcome out = collect(*it, reqs[index]);
        it = active.erase(it);
        done(index, std::move(out));
      }
      if (queue.empty() && active.empty()) break;
      for (double t = 0; t < study_.slurm.poll_interval_s && !stopped(); t += 0.1)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

 private:
  bool stopped() const { return o_.stop && o_.stop->load(); }
  void say(const std::string& line) {
    if (o_.progress) *o_.progress << line << "\n" << std::flush;
  }

  Active submit(const std::vector<TrialRequest>& reqs, std::size_t index, const SlurmAllocation& alloc) {
    const TrialRequest& req = reqs[index];
    Active a;
    a.index = index;
    a.files = slurm_job_files(out_dir_ / "slurm", req.trial_key);
    fs::create_directories(a.files.dir);
    // The request holds the study's text, credentials included (an engine's --api-key, HF_TOKEN in its
    // env): the nodes read it as this user, nobody else may.
    fs::permissions(a.files.dir, fs::perms::owner_all, fs::perm_options::replace);
    fs::remove(a.files.result);
    TrialRequest abs = req;
    if (!abs.log_path.empty()) abs.log_path = fs::absolute(abs.log_path);
    write_private(a.files.request, trial_request_json(study_, abs));
    std::string script;
    try {
      script = slurm_batch_script(study_, a.files, o_.servelab, job_name_, alloc);
    } catch (const std::invalid_argument& e) {
      throw StudyAbort(e.what());
    }
    write_text(a.files.script, script);
    fs::permissions(a.files.script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add);
    // The intent first: a tune killed after sbatch returns but before the id is written leaves this row, and
    // --resume looks for the job by its script (adopt_unrecorded) instead of submitting it a second time.
    store_.record_slurm_job(SlurmJobRecord{req.trial_key, "", kSubmitting, wall_now_s()});
    const CommandResult r = run_command(
        {o_.sbatch, "--parsable", "--chdir=" + fs::current_path().string(), a.files.script.string()},
        o_.command_timeout_s);
    std::string id = one_line(r.out);
    if (auto semi = id.find(';'); semi != std::string::npos) id.resize(semi);  // "ID;cluster"
    // A failed sbatch keeps the row: one killed at its timeout, or answered "Socket timed out", may still
    // have queued the job, and --resume looks for it before submitting again (adopt_unrecorded).
    if (r.exit_code != 0 || id.empty() || id.find_first_not_of("0123456789_") != std::string::npos)
      throw StudyAbort(fmt::format("sbatch refused the job of trial {} ({}): {}{}", req.trial_key,
                                   a.files.script.string(), one_line(r.err + " " + r.out),
                                   pending_ == 0 ? ""
                                                 : "; the jobs already submitted keep their ids in the store "
                                                   "(--resume waits for them)"));
    a.trial_key = req.trial_key;
    a.job_id = id;
    a.state = "PENDING";
    a.steady_started_s = steady_s();
    a.wall_submitted_s = wall_now_s();
    store_.record_slurm_job(SlurmJobRecord{a.trial_key, id, a.state, a.wall_submitted_s});
    ++pending_;
    say(fmt::format("slurm: submitted job {} for {} ({})", id, req.config_key, a.files.script.string()));
    return a;
  }

  /// A trial whose row a killed tune (or a failed sbatch) left at kSubmitting: sbatch may have queued its job
  /// without the id being written. Finds it among the study's jobs squeue knows by its batch script (`%o`,
  /// compared as a file, so another spelling of the same --out matches) submitted since the intent (`%V`,
  /// kAdoptSlackS earlier allowed for clocks), else by the newest `slurm-<id>.out` written in the trial's
  /// directory since then (squeue forgets an ended job after MinJobAge); of several, the largest id. Sets
  /// a.job_id and a.state, records them and says so; false when no job ran it. Throws StudyAbort when squeue
  /// cannot answer (submitting again could run the trial twice).
  bool adopt_unrecorded(Active& a, const std::string& config_key) {
    const CommandResult r = run_command(
        {o_.squeue, "-h", "-t", "all", "--name=" + job_name_, "-o", "%i|%T|%V|%o"}, o_.command_timeout_s);
    if (r.exit_code != 0)
      throw StudyAbort(fmt::format(
          "cannot tell whether the earlier run queued the job of {} (squeue: {}); nothing was submitted: "
          "run --resume again when squeue answers",
          config_key, one_line(r.err)));
    const double since = a.wall_submitted_s - kAdoptSlackS;
    long best = -1;
    std::error_code ec;
    for (const auto& [id, job] : parse_slurm_states(r.out)) {
      const auto bar = job.detail.find('|');  // "%V|%o": the submit time, then the command
      if (bar == std::string::npos) continue;
      const fs::path command = job.detail.substr(bar + 1);
      if (command != a.files.script && !fs::equivalent(command, a.files.script, ec)) continue;
      const auto submitted = slurm_wall_time(job.detail.substr(0, bar));
      if (!submitted || *submitted < since) continue;  // an earlier job of the trial (cancelled, ended)
      if (const long n = job_number(id); n > best) best = n, a.job_id = id, a.state = job.state;
    }
    if (a.job_id.empty() && fs::is_directory(a.files.dir, ec))
      for (const auto& f : fs::directory_iterator(a.files.dir, ec)) {
        const std::string name = f.path().filename().string();
        if (name.size() <= 10 || name.rfind("slurm-", 0) != 0 || !name.ends_with(".out")) continue;
        const std::string id = name.substr(6, name.size() - 10);
        const auto mtime = std::chrono::duration<double>(
            std::chrono::file_clock::to_sys(f.last_write_time(ec)).time_since_epoch());
        if (mtime.count() < since) continue;  // a cancelled earlier job's output
        if (const long n = job_number(id); n > best) best = n, a.job_id = id, a.state = "";
      }
    if (a.job_id.empty()) {
      say(fmt::format(
          "slurm: {} was being submitted when the earlier run stopped; no job of it is known to squeue or "
          "wrote output: submitting it",
          config_key));
      return false;
    }
    if (a.state.empty()) a.state = "RUNNING";  // poll_states reads the real one (sacct, or its result)
    store_.record_slurm_job(SlurmJobRecord{a.trial_key, a.job_id, a.state, a.wall_submitted_s});
    say(fmt::format(
        "slurm: job {} of {} was submitted by the earlier run but its id not recorded (found by its script "
        "{}): waiting for it, not submitting again",
        a.job_id, config_key, a.files.script.string()));
    return true;
  }

  void poll_states(std::vector<Active>& active) {
    if (active.empty()) return;
    std::string ids;
    for (const auto& a : active) ids += (ids.empty() ? "" : ",") + a.job_id;
    const CommandResult r =
        run_command({o_.squeue, "-h", "-t", "all", "-o", "%i|%T|%r", "-j", ids}, o_.command_timeout_s);
    // squeue exits 1 when it knows none of the ids (they left its memory after MinJobAge).
    if (r.exit_code != 0 && r.err.find("Invalid job id") == std::string::npos) {
      if (++squeue_failures_ >= 10)
        throw StudyAbort("squeue failed 10 times in a row: " + one_line(r.err) +
                         " (the jobs keep running; --resume waits for them)");
      return;
    }
    squeue_failures_ = 0;
    const auto states = parse_slurm_states(r.out);
    for (auto& a : active) {
      std::string state;
      if (auto it = states.find(a.job_id); it != states.end()) state = it->second.state;
      if (state.empty()) state = sacct_state(a.job_id);
      if (state.empty() && fs::exists(a.files.result)) state = "COMPLETED";  // gone from the scheduler's view
      if (state.empty()) {
        ++a.unseen_polls;
        continue;
      }
      a.unseen_polls = 0;
      if (state == a.state) continue;
      if (state == "REQUEUED" || state == "PREEMPTED" || (a.state == "RUNNING" && state == "PENDING")) {
        ++a.requeues;
        say(fmt::format("slurm: job {} was {} and waits to run again", a.job_id,
                        state == "PREEMPTED" ? "preempted" : "requeued"));
      }
      a.state = state;
      store_.record_slurm_job(SlurmJobRecord{a.trial_key, a.job_id, a.state, a.wall_submitted_s});
    }
  }

  /// sacct's state of a job squeue no longer knows, "" when sacct cannot say (no accounting storage).
  std::string sacct_state(const std::string& id) {
    if (sacct_disabled_) return "";
    const CommandResult r =
        run_command({o_.sacct, "-n", "-P", "-X", "-o", "JobID,State", "-j", id}, o_.command_timeout_s);
    if (r.exit_code != 0) {
      sacct_disabled_ = r.err.find("accounting storage is disabled") != std::string::npos;
      return "";
    }
    const auto states = parse_slurm_states(r.out);
    auto it = states.find(id);
    return it == states.end() ? "" : it->second.state;
  }

  bool ended(const Active& a) const {
    return (!a.state.empty() && !slurm_state_live(a.state)) || a.unseen_polls >= 30;
  }

  TrialOutcome collect(const Active& a, const TrialRequest& req) {
    const std::string output = (a.files.dir / fmt::format("slurm-{}.out", a.job_id)).string();
    TrialOutcome out;
    out.log_tail = file_tail(output, 30);
    const std::string where = "Slurm job " + a.job_id;
    if (a.unseen_polls >= 30) {
      out.status = TrialStatus::kError;
      out.reason = where + " vanished: neither squeue nor sacct knows it and it wrote no result";
    } else if (auto failure = slurm_state_failure(a.state)) {
      out.status = *failure;
      switch (*failure) {
        case TrialStatus::kJobTimeLimit:
          out.reason = fmt::format("{} hit its time limit ({}, [slurm] time_limit_min = {:g})", where,
                                   slurm_time(study_.slurm.time_limit_min), study_.slurm.time_limit_min);
          break;
        case TrialStatus::kJobNodeFail:
          out.reason = where + " ended " + a.state + ": a node of its allocation failed";
          break;
        case TrialStatus::kJobPreempted:
          out.reason =
              where + " was preempted and not requeued ([slurm] requeue, the partition's PreemptMode)";
          break;
        case TrialStatus::kJobOutOfMemory:
          out.reason = where + " was killed for its host-memory limit (OUT_OF_MEMORY; not GPU memory)";
          break;
        default:
          out.reason = where + " was cancelled (scancel, or an administrator; not by this tune)";
      }
      // The engine's own log says what it was doing when the job ended.
      if (!req.log_path.empty()) out.log_tail = file_tail(fs::absolute(req.log_path).string(), 30);
    } else if (fs::exists(a.files.result)) {
      try {
        out = read_trial_outcome(a.files.result);
      } catch (const std::exception& e) {
        out.status = TrialStatus::kError;
        out.reason = where + ": " + e.what();
      }
    } else {
      out.status = TrialStatus::kError;
      const std::string last = one_line(error_line(out.log_tail));
      out.reason = fmt::format("{} ended {} without writing {}{}", where, a.state, a.files.result.string(),
                               last.empty() ? " (its output has no error line)" : ": " + last);
    }
    if (a.requeues > 0) out.reason += fmt::format(" (requeued {} time(s))", a.requeues);
    if (out.status != TrialStatus::kOk) out.reason += "; job output: " + output;
    if (out.wall_s == 0) out.wall_s = steady_s() - a.steady_started_s;
    // A job neither squeue nor sacct knows any more did not end in the state last seen (often PENDING).
    say(a.unseen_polls >= 30
            ? fmt::format("slurm: job {} vanished from squeue and sacct (last seen {}; {})", a.job_id,
                          a.state.empty() ? "never" : a.state, trial_status_name(out.status))
            : fmt::format("slurm: job {} ended {} ({})", a.job_id, a.state.empty() ? "?" : a.state,
                          trial_status_name(out.status)));
    return out;
  }

  void cancel(const std::vector<TrialRequest>& reqs, std::vector<Active>& active,
              std::deque<std::size_t>& queue, const TrialDone& done) {
    std::vector<std::string> argv = {o_.scancel};
    for (const auto& a : active) argv.push_back(a.job_id);
    if (argv.size() > 1) {
      const CommandResult r = run_command(argv, o_.command_timeout_s);
      say(fmt::format("slurm: cancelled {} job(s) of the study{}", argv.size() - 1,
                      r.exit_code == 0 ? "" : " (scancel: " + one_line(r.err) + ")"));
    }
    for (const auto& a : active) {
      store_.forget_slurm_job(reqs[a.index].trial_key);  // --resume submits it again
      TrialOutcome o;
      o.status = TrialStatus::kInterrupted;
      done(a.index, std::move(o));
    }
    for (std::size_t i : queue) {
      TrialOutcome o;
      o.status = TrialStatus::kInterrupted;
      done(i, std::move(o));
    }
    active.clear();
    queue.clear();
  }

  Study study_;
  SlurmRunnerOptions o_;
  Store store_;
  fs::path out_dir_;
  std::string job_name_;
  int pending_ = 0;
  int squeue_failures_ = 0;
  bool sacct_disabled_ = false;
};

/// A TCP port nothing listens on at this moment (the kernel's choice for port 0).
int free_port(const std::string& host) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket(): " + std::string(strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = strerror(errno);
    close(fd);
    throw std::runtime_error("no free port on " + host + ": " + why);
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

BatchTrialRunner make_slurm_runner(const Study& study, SlurmRunnerOptions options) {
  auto runner = std::make_shared<SlurmRunner>(study, std::move(options));
  return [runner](const std::vector<TrialRequest>& reqs, const TrialDone& done) { runner->run(reqs, done); };
}

int run_trial_file(const fs::path& request_path, const fs::path& result_path, const std::atomic<bool>* stop) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(common::read_file(request_path));
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read trial request " + request_path.string() + ": " + e.what());
  }
  const auto t0 = std::chrono::steady_clock::now();
  TrialOutcome out;
  try {
    Study study = parse_study(j.at("study_toml").get<std::string>(), j.at("study_path").get<std::string>(),
                              common::data_dir());
    study = scale_prompts(std::move(study), j.at("prompts_scale").get<double>());
    // Several trials may share a node: each engine gets a port free on it (the rendered command's --port).
    study.port = free_port(study.host);
    TrialRequest req;
    req.trial_key = j.at("trial_key").get<std::string>();
    req.engine = j.at("engine").get<std::string>();
    req.config_key = j.at("config_key").get<std::string>();
    req.knobs = j.at("knobs").get<std::map<std::string, std::string>>();
    req.repeat = j.at("repeat").get<int>();
    req.log_path = j.at("log_path").get<std::string>();
    for (const auto& s : j.at("scenarios"))
      req.scenarios.push_back(Scenario{s.at("id").get<std::string>(), s.at("description").get<std::string>(),
                                       s.at("args").get<std::vector<std::string>>(),
                                       s.at("weight").get<double>()});
    const Rendered cmd = render(study, CandidateConfig{req.engine, req.knobs});
    req.argv = cmd.argv;
    req.env = cmd.env;
    if (!req.log_path.empty()) fs::create_directories(req.log_path.parent_path());
    const SlurmNodeContext node = SlurmNodeContext::from_environment();
    std::optional<engines::NodeLaunch> launch;
    if (node.nodes > 1) {  // this node's part of the engine's multi-node launch
      launch = slurm_node_launch(study, req.engine, cmd.argv, cmd.env, node);
      if (node.node_rank > 0) {
        const fs::path log = req.log_path.string() + fmt::format(".node{}", node.node_rank);
        return run_worker_node(*launch, log, result_path, node, study.engine(req.engine).stop_grace_s, stop);
      }
      for (const auto& c : launch->setup)
        if (const auto r = run_command(c, 600); r.exit_code != 0)
          throw std::runtime_error(
              fmt::format("head setup `{}` failed: {}", c.at(0), one_line(r.err + r.out)));
      req.argv = launch->argv;
      req.env = launch->env;
    }
    TrialRunner local = default_runner(study, Target::kLocal, stop);
    out = local(req);
    if (launch)
      for (const auto& c : launch->teardown) run_command(c, 120);
  } catch (const std::exception& e) {
    if (std::getenv("SLURM_NODEID") && std::string(std::getenv("SLURM_NODEID")) != "0")
      throw;  // a worker: no result
    out = TrialOutcome{};
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    out.status = TrialStatus::kError;
    out.reason = fmt::format("on node {}: {}", host, e.what());
  }
  if (out.wall_s == 0)
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const fs::path tmp = result_path.string() + ".part";
  write_text(tmp, trial_outcome_json(out));
  fs::rename(tmp, result_path);
  return 0;
}

}  // namespace servelab::tune
