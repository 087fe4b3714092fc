// Happens-before annotations for abseil's synchronization primitives in ThreadSanitizer
// builds (KVSTASH_SANITIZE=thread) against an abseil that was not built with it.
//
// Debian's libabsl_synchronization is not instrumented, so ThreadSanitizer cannot see that
// absl::Mutex, absl::CondVar, absl::Notification, absl::BlockingCounter and absl::Barrier
// order memory, and would report every access guarded by them as a race. This file
// defines those functions in each executable (exported, so kvstash's calls and gRPC's own
// bind to them), tells ThreadSanitizer what each one orders (__tsan_release before a
// function that may let another thread in, __tsan_acquire after one that waited for
// another thread), and calls abseil's own implementation found with dlsym(RTLD_NEXT).
// Only ever linked into ThreadSanitizer builds (see the top-level CMakeLists.txt).
//
// Thread-safety: every function is as thread-safe as the abseil function it forwards to;
// the lookups of abseil's functions run once (function-local statics).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/options.h"
#include "absl/synchronization/barrier.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define KVSTASH_STR2(x) #x
#define KVSTASH_STR(x) KVSTASH_STR2(x)

// abseil's own definition of the function whose Itanium-mangled name is
// "_ZN4absl" + <inline namespace> + `tail` (or "_ZNK4absl..." for const members); aborts
// when it is missing, since running on without the annotations would only report noise.
template <typename Fn>
Fn Real(const char* tail, bool is_const = false) {
  const std::string ns = KVSTASH_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name =
      std::string(is_const ? "_ZNK4absl" : "_ZN4absl") + std::to_string(ns.size()) + ns + tail;
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    fprintf(stderr, "kvstash tsan annotations: %s not found in abseil\n", name.c_str());
    abort();
  }
  return reinterpret_cast<Fn>(fn);
}

// A Notification's flag follows its mutex (absl/synchronization/notification.h); the
// inline HasBeenNotified() reads it with an instrumented acquire load, so Notify() must
// release that address too.
void* NotifiedFlag(const absl::Notification* n) {
  static_assert(sizeof(absl::Notification) >= sizeof(absl::Mutex) + sizeof(std::atomic<bool>));
  return const_cast<char*>(reinterpret_cast<const char*>(n)) + sizeof(absl::Mutex);
}

// abseil evaluates a waiter's condition under the mutex but inside its own Await, LockWhen
// and Unlock, out of reach of the annotations around those calls: each evaluation acquires
// the mutex's address (it reads what the last holder wrote) and releases it (whoever locks
// it next is ordered after what the condition read).
struct AnnotatedCondition {
  const absl::Condition* inner;
  absl::Mutex* mu;

  static bool Eval(AnnotatedCondition* c) {
    __tsan_acquire(c->mu);
    const bool met = c->inner->Eval();
    __tsan_release(c->mu);
    return met;
  }
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

// --- Mutex: the mutex's address carries the order from each unlock to the next lock.

Mutex::~Mutex() {
  static auto real = Real<void (*)(Mutex*)>("5MutexD2Ev");
  __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex4LockEv");
  real(this);
  __tsan_acquire(this);
}

void Mutex::ReaderLock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  real(this);
  __tsan_acquire(this);
}

bool Mutex::TryLock() {
  static auto real = Real<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static auto real = Real<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  const bool locked = real(this);
  if (locked) __tsan_acquire(this);
  return locked;
}

void Mutex::Unlock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex6UnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  static auto real = Real<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  __tsan_release(this);
  real(this);
}

void Mutex::LockWhen(const Condition& cond) {
  static auto real = Real<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&AnnotatedCondition::Eval, &annotated));
  __tsan_acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static auto real =
      Real<void (*)(Mutex*, const Condition&)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&AnnotatedCondition::Eval, &annotated));
  __tsan_acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  AnnotatedCondition annotated{&cond, this};
  const bool met = real(this, Condition(&AnnotatedCondition::Eval, &annotated), timeout);
  __tsan_acquire(this);  // held on return either way
  return met;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  AnnotatedCondition annotated{&cond, this};
  const bool met = real(this, Condition(&AnnotatedCondition::Eval, &annotated), deadline);
  __tsan_acquire(this);
  return met;
}

// The waits below give the mutex up while they block and hold it again on return.
void Mutex::Await(const Condition& cond) {
  static auto real = Real<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  __tsan_release(this);
  AnnotatedCondition annotated{&cond, this};
  real(this, Condition(&AnnotatedCondition::Eval, &annotated));
  __tsan_acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  __tsan_release(this);
  AnnotatedCondition annotated{&cond, this};
  const bool met = real(this, Condition(&AnnotatedCondition::Eval, &annotated), timeout);
  __tsan_acquire(this);
  return met;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  static auto real = Real<bool (*)(Mutex*, const Condition&, Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_release(this);
  AnnotatedCondition annotated{&cond, this};
  const bool met = real(this, Condition(&AnnotatedCondition::Eval, &annotated), deadline);
  __tsan_acquire(this);
  return met;
}

void CondVar::Wait(Mutex* mu) {
  static auto real = Real<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  __tsan_release(mu);
  real(this, mu);
  __tsan_acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  static auto real = Real<bool (*)(CondVar*, Mutex*, Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, timeout);
  __tsan_acquire(mu);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  static auto real =
      Real<bool (*)(CondVar*, Mutex*, Time)>("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  __tsan_release(mu);
  const bool timed_out = real(this, mu, deadline);
  __tsan_acquire(mu);
  return timed_out;
}

// --- One-shot and counting events: the object's address carries the order from the
// notifying threads to the waiters.

void Notification::Notify() {
  static auto real = Real<void (*)(Notification*)>("12Notification6NotifyEv");
  __tsan_release(this);
  __tsan_release(NotifiedFlag(this));
  real(this);
}

void Notification::WaitForNotification() const {
  static auto real =
      Real<void (*)(const Notification*)>("12Notification19WaitForNotificationEv", true);
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  static auto real = Real<bool (*)(const Notification*, Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE", true);
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  static auto real = Real<bool (*)(const Notification*, Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE", true);
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool BlockingCounter::DecrementCount() {
  static auto real = Real<bool (*)(BlockingCounter*)>("15BlockingCounter14DecrementCountEv");
  __tsan_release(this);
  const bool zero = real(this);
  if (zero) __tsan_acquire(this);
  return zero;
}

void BlockingCounter::Wait() {
  static auto real = Real<void (*)(BlockingCounter*)>("15BlockingCounter4WaitEv");
  real(this);
  __tsan_acquire(this);
}

bool Barrier::Block() {
  static auto real = Real<bool (*)(Barrier*)>("7Barrier5BlockEv");
  __tsan_release(this);
  const bool last = real(this);
  __tsan_acquire(this);
  return last;
}

ABSL_NAMESPACE_END
}  // namespace absl
