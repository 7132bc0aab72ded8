// SPDX-License-Identifier: Apache-2.0
#include "audit/common/stop.h"

#include "audit/common/errors.h"

#include <atomic>
#include <csignal>

namespace ra {
namespace {

std::atomic<int> g_stop_signal{0};

void on_stop_signal(int sig) { g_stop_signal = sig; }

static_assert(SIGINT == 2 && SIGTERM == 15 && SIGHUP == 1 && SIGQUIT == 3 && SIGPIPE == 13);

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (const int sig : kStopSignals) sigaction(sig, &sa, nullptr);
}

int stop_signal() { return g_stop_signal.load(); }

void check_stop() {
  if (g_stop_signal.load() != 0) throw Interrupted();
}

}  // namespace ra
