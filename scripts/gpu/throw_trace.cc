// LD_PRELOAD diagnostic for the GPU host: where ONNX Runtime throws from.
// Wraps __cxa_throw; for an exception whose type name contains $THROW_TRACE_MATCH
// (default OnnxRuntimeException) it prints, to stderr, the exception's message,
// the throwing thread (id, name, whether it is the process's main thread) and its
// stack, then the main thread's stack (a signal makes the main thread print its
// own), and goes on with the throw. Built by scripts/gpu/hf.sh's caller here:
//   g++ -shared -fPIC -O1 -o throw_trace.so scripts/gpu/throw_trace.cc -ldl
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

namespace {
void print_stack(const char* who) {
  void* frames[64];
  int n = backtrace(frames, 64);
  fprintf(stderr, "[throw-trace] stack of %s (%d frames):\n", who, n);
  backtrace_symbols_fd(frames, n, 2);
}

void on_signal(int) { print_stack("the main thread"); }

void thread_name(char* out, size_t len) {
  out[0] = 0;
  FILE* f = fopen("/proc/thread-self/comm", "r");
  if (!f) return;
  if (fgets(out, static_cast<int>(len), f)) out[strcspn(out, "\n")] = 0;
  fclose(f);
}
}  // namespace

extern "C" void __cxa_throw(void* obj, std::type_info* type, void (*dest)(void*)) {
  using Throw = void (*)(void*, std::type_info*, void (*)(void*));
  static Throw real = reinterpret_cast<Throw>(dlsym(RTLD_NEXT, "__cxa_throw"));
  const char* match = getenv("THROW_TRACE_MATCH");
  const char* name = type ? type->name() : "?";
  if (strstr(name, match ? match : "OnnxRuntimeException")) {
    long tid = syscall(SYS_gettid);
    char comm[64];
    thread_name(comm, sizeof comm);
    const char* what = static_cast<std::exception*>(obj)->what();
    fprintf(stderr, "[throw-trace] %s thrown on thread %ld (%s)%s: %.400s\n", name, tid, comm,
            tid == getpid() ? ", the main thread" : ", not the main thread", what ? what : "");
    print_stack("the throwing thread");
    if (tid != getpid()) {
      signal(SIGUSR2, on_signal);
      syscall(SYS_tgkill, getpid(), getpid(), SIGUSR2);
      usleep(300 * 1000);
    }
  }
  real(obj, type, dest);
  abort();
}
