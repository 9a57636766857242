// One flowemu solver problem run through SimGrid's LMM solver, event by event,
// as SimGrid's CM02 network model runs its communications with the lazy update
// (`--cfg=network/optim:Lazy`, the default): the maxmin system with selective
// update re-solves only what a finish modified; Model::next_occurring_event_lazy
// (SimGrid's own) updates the finish dates of the actions whose rate changed
// in the action heap; the earliest finishes, and its variable is freed before
// the next solve. Only SimGrid's engine around it (actors, activities, the
// platform) is left out, so the time is a lower bound on a SimGrid run.
//
// A flow is a variable of sharing penalty 1 crossing each link of its route
// with its route fraction as consumption weight (split routes); a persistent
// flow has 1e300 bytes. Bytes are multiplied by `scale` so that finish times
// are far above SimGrid's timing precision (1e-9 s: finishes closer than that
// are merged).
//
// Usage: lmmrun PROBLEM SCALE LIMIT_S OUT
//   PROBLEM  written by tests/benchmarks/simgrid/problems.py (write_problem)
//   LIMIT_S  stop after this many seconds of solving (checked after each event)
//   OUT      float64 finish time per flow (-1: not finished), in the scaled unit
// Prints one line: key=value pairs (run_s: the event loop, build excluded).
// Build: python -m tests.benchmarks.simgrid builds it against a SimGrid 4.1
// source tree built with cmake (docs/model.md, "Against SimGrid").
#include "simgrid/kernel/resource/Action.hpp"
#include "simgrid/kernel/resource/Model.hpp"
#include "src/kernel/lmm/maxmin.hpp"
#include "src/simgrid/math_utils.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <vector>

// SimGrid's clock (EngineImpl::now_, private in its header): the actions read
// it to update their bytes left lazily, so the loop below sets it.
namespace simgrid::kernel {
class EngineImpl {
public:
  static double now_;
};
} // namespace simgrid::kernel

using namespace simgrid::kernel;
using resource::Action;
using resource::Model;

class FlowAction : public Action {
public:
  int64_t index;
  FlowAction(Model* m, double cost, int64_t i) : Action(m, cost, false), index(i) {}
  // as NetworkCm02Action::update_remains_lazy
  void update_remains_lazy(double now) override
  {
    if (not is_running())
      return;
    double delta = now - get_last_update();
    if (get_remains_no_update() > 0)
      update_remains(get_last_value() * delta);
    if (get_remains_no_update() <= 0 && get_variable()->get_penalty() > 0) {
      finish(Action::State::FINISHED);
      get_model()->get_action_heap().remove(this);
    }
    set_last_update();
    set_last_value(get_rate());
  }
};

class FlowModel : public Model {
public:
  FlowModel() : Model("flows")
  {
    set_maxmin_system(lmm::System::build("maxmin", true));
    set_update_algorithm(UpdateAlgo::LAZY);
  }
  // as NetworkCm02Model::update_actions_state_lazy (no latency phase)
  void update_actions_state_lazy(double now, double) override
  {
    while (not get_action_heap().empty() && double_equals(get_action_heap().top_date(), now, sg_precision_timing)) {
      auto* action = get_action_heap().pop();
      action->finish(Action::State::FINISHED);
      get_action_heap().remove(action);
    }
  }
  void update_actions_state_full(double, double) override {}
};

static double since(std::chrono::steady_clock::time_point a)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

template <typename T> static void read(FILE* f, std::vector<T>& v)
{
  if (fread(v.data(), sizeof(T), v.size(), f) != v.size()) {
    fprintf(stderr, "lmmrun: the problem file is short\n");
    exit(2);
  }
}

int main(int argc, char** argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: lmmrun PROBLEM SCALE LIMIT_S OUT\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (f == nullptr) {
    fprintf(stderr, "lmmrun: cannot open %s\n", argv[1]);
    return 2;
  }
  double scale = atof(argv[2]);
  double limit = atof(argv[3]);
  std::vector<int64_t> hdr(3);
  read(f, hdr);
  int64_t n = hdr[0], n_links = hdr[1], n_entries = hdr[2];
  std::vector<int64_t> ptr(n + 1);
  std::vector<int32_t> link(n_entries);
  std::vector<double> frac(n_entries), cap(n_links), bytes(n);
  std::vector<uint8_t> keep(n);
  read(f, ptr);
  read(f, link);
  read(f, frac);
  read(f, cap);
  read(f, bytes);
  read(f, keep);
  fclose(f);

  auto t_build = std::chrono::steady_clock::now();
  EngineImpl::now_ = 0.0;
  FlowModel model;
  lmm::System* sys = model.get_maxmin_system();
  std::vector<lmm::Constraint*> cnst(n_links);
  for (int64_t l = 0; l < n_links; l++)
    cnst[l] = sys->constraint_new(nullptr, cap[l]);
  int64_t finite = 0;
  for (int64_t i = 0; i < n; i++) {
    if (ptr[i + 1] == ptr[i] || (not keep[i] && bytes[i] <= 0))
      continue;   // (flowemu finishes these at once)
    finite += keep[i] ? 0 : 1;
    auto* a = new FlowAction(&model, keep[i] ? 1e300 : bytes[i] * scale, i);
    a->set_variable(sys->variable_new(a, 1.0, -1.0, (unsigned)(ptr[i + 1] - ptr[i])));
    for (int64_t e = ptr[i]; e < ptr[i + 1]; e++)
      sys->expand(cnst[link[e]], a->get_variable(), frac[e]);
  }
  double build_s = since(t_build);

  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> finish(n, -1.0);
  double now = 0.0;
  double first_s = -1.0;
  int64_t done = 0, events = 0;
  bool stopped = false;
  while (done < finite) {
    double dt = model.next_occurring_event(now);
    if (first_s < 0)
      first_s = since(t0);
    if (dt < 0)
      break;
    now += dt;
    EngineImpl::now_ = now;
    model.update_actions_state(now, dt);
    events++;
    auto* fin = model.get_finished_action_set();
    while (not fin->empty()) {
      auto& a = static_cast<FlowAction&>(fin->front());
      finish[a.index] = now;
      done++;
      a.unref();   // frees its variable: the next solve sees it gone
    }
    if (since(t0) > limit) {
      stopped = true;
      break;
    }
  }
  double run_s = since(t0);
  FILE* o = fopen(argv[4], "wb");
  fwrite(finish.data(), sizeof(double), n, o);
  fclose(o);
  printf("flows=%lld finite=%lld entries=%lld build_s=%.6f first_solve_s=%.6f run_s=%.6f events=%lld "
         "done=%lld stopped=%d\n",
         (long long)n, (long long)finite, (long long)n_entries, build_s, first_s, run_s, (long long)events,
         (long long)done, stopped ? 1 : 0);
  fflush(stdout);
  _exit(0);   // (skips freeing a system that may still hold variables)
}
