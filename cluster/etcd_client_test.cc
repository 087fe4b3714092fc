// EtcdClient against a real etcd on loopback (tests/etcd_process.h).
#include "cluster/etcd_client.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cluster/cluster_test_util.h"
#include "gtest/gtest.h"
#include "testing/subprocess.h"
#include "tests/etcd_process.h"

namespace kvstash::cluster {
namespace {

using ::kvstash::cluster::testing::DeadEndpoint;
using ::kvstash::cluster::testing::WaitFor;
using ::kvstash::testing::EtcdProcess;
using ::kvstash::testing::EtcdTest;

// What a watch delivered, collected from its thread.
class Recorder {
 public:
  void OnEvents(absl::Span<const EtcdEvent> events, int64_t revision) {
    absl::MutexLock lock(&mu_);
    for (const EtcdEvent& e : events) {
      lines_.push_back(absl::StrCat(e.type == EtcdEvent::Type::kPut ? "put " : "delete ", e.kv.key,
                                    e.type == EtcdEvent::Type::kPut ? "=" + e.kv.value : ""));
    }
    last_revision_ = revision;
  }
  void OnError(const absl::Status& why) {
    absl::MutexLock lock(&mu_);
    errors_.push_back(why);
  }
  std::vector<std::string> lines() {
    absl::MutexLock lock(&mu_);
    return lines_;
  }
  std::vector<absl::Status> errors() {
    absl::MutexLock lock(&mu_);
    return errors_;
  }
  std::unique_ptr<EtcdWatch> Watch(EtcdClient& client, const std::string& prefix, int64_t revision,
                                   int64_t give_up_ms = 5000) {
    auto watch = client.WatchPrefix(
        prefix, revision,
        [this](absl::Span<const EtcdEvent> events, int64_t rev) { OnEvents(events, rev); },
        [this](const absl::Status& why) { OnError(why); }, give_up_ms);
    EXPECT_TRUE(watch.ok()) << watch.status();
    return watch.ok() ? *std::move(watch) : nullptr;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> errors_ ABSL_GUARDED_BY(mu_);
  int64_t last_revision_ ABSL_GUARDED_BY(mu_) = 0;
};

class EtcdClientTest : public EtcdTest {
 protected:
  std::unique_ptr<EtcdClient> NewClient(std::vector<std::string> endpoints) {
    EtcdOptions options;
    options.endpoints = std::move(endpoints);
    options.call_timeout_ms = 1000;
    auto client = EtcdClient::Create(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::vector<std::string> Keys(const std::string& prefix) {
    auto range = client_->GetPrefix(prefix);
    EXPECT_TRUE(range.ok()) << range.status();
    std::vector<std::string> keys;
    if (range.ok()) {
      for (const EtcdKeyValue& kv : range->kvs) keys.push_back(kv.key);
    }
    return keys;
  }
};

TEST_F(EtcdClientTest, PutGetPrefixDelete) {
  ASSERT_TRUE(client_->Put("/t/a/1", "one").ok());
  ASSERT_TRUE(client_->Put("/t/a/2", "two").ok());
  ASSERT_TRUE(client_->Put("/t/b", "other").ok());
  auto range = client_->GetPrefix("/t/a/");
  ASSERT_TRUE(range.ok()) << range.status();
  ASSERT_EQ(range->kvs.size(), 2u);
  EXPECT_EQ(range->kvs[0].key, "/t/a/1");
  EXPECT_EQ(range->kvs[0].value, "one");
  EXPECT_EQ(range->kvs[1].value, "two");
  EXPECT_GT(range->revision, 0);
  EXPECT_GE(range->revision, range->kvs[1].mod_revision);
  ASSERT_TRUE(client_->Delete("/t/a/1").ok());
  EXPECT_EQ(Keys("/t/a/"), std::vector<std::string>{"/t/a/2"});
  EXPECT_TRUE(client_->Delete("/t/absent").ok());
}

TEST_F(EtcdClientTest, LeaseGrantKeepAliveRevoke) {
  auto lease = client_->GrantLease(2);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->Put("/t/leased", "v", *lease).ok());
  auto range = client_->GetPrefix("/t/leased");
  ASSERT_TRUE(range.ok() && range->kvs.size() == 1);
  EXPECT_EQ(range->kvs[0].lease, *lease);
  auto ttl = client_->KeepAliveOnce(*lease);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_GT(*ttl, 0);
  ASSERT_TRUE(client_->RevokeLease(*lease).ok());
  EXPECT_TRUE(Keys("/t/leased").empty());
  EXPECT_TRUE(absl::IsNotFound(client_->KeepAliveOnce(*lease).status()));
  EXPECT_TRUE(absl::IsNotFound(client_->Put("/t/x", "v", *lease)));
  EXPECT_TRUE(absl::IsInvalidArgument(client_->GrantLease(0).status()));
}

TEST_F(EtcdClientTest, LeaseExpiresWithoutKeepAlive) {
  auto lease = client_->GrantLease(2);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(client_->Put("/t/expiring", "v", *lease).ok());
  EXPECT_TRUE(WaitFor([&] { return Keys("/t/expiring").empty(); }));
  EXPECT_TRUE(absl::IsNotFound(client_->KeepAliveOnce(*lease).status()));
}

TEST_F(EtcdClientTest, WatchSeesPutsAndDeletes) {
  ASSERT_TRUE(client_->Put("/w/before", "0").ok());
  auto range = client_->GetPrefix("/w/");
  ASSERT_TRUE(range.ok()) << range.status();
  Recorder recorder;
  auto watch = recorder.Watch(*client_, "/w/", range->revision + 1);
  ASSERT_NE(watch, nullptr);
  ASSERT_TRUE(client_->Put("/w/a", "1").ok());
  ASSERT_TRUE(client_->Put("/other", "x").ok());
  ASSERT_TRUE(client_->Put("/w/b", "2").ok());
  ASSERT_TRUE(client_->Delete("/w/a").ok());
  const std::vector<std::string> want = {"put /w/a=1", "put /w/b=2", "delete /w/a"};
  EXPECT_TRUE(WaitFor([&] { return recorder.lines().size() >= want.size(); }));
  EXPECT_EQ(recorder.lines(), want);
  EXPECT_TRUE(recorder.errors().empty());
}

TEST_F(EtcdClientTest, CallsStopAtTheirDeadline) {
  const absl::Time past = absl::Now() - absl::Seconds(1);
  absl::Status status = client_->Put("/d/k", "v", 0, past);
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("deadline"), std::string::npos) << status;
  EXPECT_TRUE(absl::IsUnavailable(client_->GetPrefix("/d/", past).status()));
  EXPECT_TRUE(absl::IsUnavailable(client_->GrantLease(5, past).status()));
  EXPECT_TRUE(Keys("/d/").empty());

  const absl::Time later = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(client_->Put("/d/k", "v", 0, later).ok());
  auto lease = client_->GrantLease(5, later);
  ASSERT_TRUE(lease.ok()) << lease.status();
  auto ttl = client_->KeepAliveOnce(*lease, later);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_TRUE(absl::IsUnavailable(client_->KeepAliveOnce(*lease, past).status()));
  EXPECT_TRUE(client_->RevokeLease(*lease, later).ok());
  auto range = client_->GetPrefix("/d/", later);
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->kvs.size(), 1u);
}

TEST_F(EtcdClientTest, WatchDestroyedWhileEventsFlow) {
  auto writer = NewClient({etcd_->endpoint()});
  std::atomic<bool> stop{false};
  std::thread put([&] {
    for (int i = 0; !stop; ++i) writer->Put(absl::StrCat("/e/", i % 50), "v").IgnoreError();
  });
  for (int round = 0; round < 20; ++round) {
    Recorder recorder;
    auto watch = recorder.Watch(*client_, "/e/", 0);
    ASSERT_NE(watch, nullptr);
    if (round % 2 == 0) {
      EXPECT_TRUE(WaitFor([&] { return !recorder.lines().empty(); }));
    }
    watch.reset();  // while events arrive
    const size_t seen = recorder.lines().size();
    EXPECT_TRUE(WaitFor([&] { return client_->Put("/e/marker", "m").ok(); }));
    EXPECT_EQ(recorder.lines().size(), seen);  // nothing delivered after destruction
  }
  stop = true;
  put.join();
}

// No etcd: the watch gives up on a dead endpoint at once and calls on_error, which
// destroys it.
TEST(EtcdWatchTest, DestroyedFromItsOwnCallbackSaysSo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        DeadEndpoint dead;
        EtcdOptions options;
        options.endpoints = {dead.endpoint()};
        auto client = EtcdClient::Create(options);
        std::unique_ptr<EtcdWatch> watch;
        absl::Mutex mu;
        bool ready = false;
        auto made = (*client)->WatchPrefix(
            "/s/", 0, [](absl::Span<const EtcdEvent>, int64_t) {},
            [&](const absl::Status&) {
              absl::MutexLock lock(&mu);
              mu.Await(absl::Condition(&ready));
              watch.reset();
            },
            /*give_up_ms=*/0);
        {
          absl::MutexLock lock(&mu);
          watch = *std::move(made);
          ready = true;
        }
        absl::SleepFor(absl::Seconds(60));
      },
      "destroyed from its own on_events or on_error");
}

TEST_F(EtcdClientTest, SecondEndpointUsedWhenTheFirstIsDead) {
  DeadEndpoint dead;
  ASSERT_FALSE(dead.endpoint().empty());
  auto client = NewClient({dead.endpoint(), "http://" + etcd_->endpoint()});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Put("/f/k", "v").ok());
  auto range = client->GetPrefix("/f/");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->kvs.size(), 1u);

  // A watch starting from the dead endpoint moves on too.
  auto fresh = NewClient({dead.endpoint(), etcd_->endpoint()});
  Recorder recorder;
  auto watch = recorder.Watch(*fresh, "/f/", range->revision + 1);
  ASSERT_TRUE(client->Put("/f/k2", "v2").ok());
  EXPECT_TRUE(WaitFor([&] { return !recorder.lines().empty(); }));
  EXPECT_EQ(recorder.lines(), std::vector<std::string>{"put /f/k2=v2"});
}

TEST_F(EtcdClientTest, KilledEtcdGivesUnavailable) {
  ASSERT_TRUE(client_->Put("/k/a", "1").ok());
  Recorder recorder;
  auto watch = recorder.Watch(*client_, "/k/", 0, /*give_up_ms=*/1000);
  etcd_->Kill();
  absl::Status status = client_->GetPrefix("/k/").status();
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find(etcd_->endpoint()), std::string::npos) << status;
  EXPECT_TRUE(absl::IsUnavailable(client_->Put("/k/b", "2")));
  EXPECT_TRUE(absl::IsUnavailable(client_->GrantLease(5).status()));
  EXPECT_TRUE(absl::IsUnavailable(client_->KeepAliveOnce(1).status()));
  // The watch gives up once every endpoint failed for give_up_ms.
  ASSERT_TRUE(WaitFor([&] { return !recorder.errors().empty(); }));
  ASSERT_EQ(recorder.errors().size(), 1u);
  EXPECT_TRUE(absl::IsUnavailable(recorder.errors()[0])) << recorder.errors()[0];
}

TEST_F(EtcdClientTest, WatchResumesAfterEtcdRestart) {
  auto range = client_->GetPrefix("/r/");
  ASSERT_TRUE(range.ok()) << range.status();
  Recorder recorder;
  auto watch = recorder.Watch(*client_, "/r/", range->revision + 1, /*give_up_ms=*/60000);
  ASSERT_TRUE(client_->Put("/r/1", "a").ok());
  EXPECT_TRUE(WaitFor([&] { return recorder.lines().size() == 1; }));
  ASSERT_TRUE(etcd_->Restart().ok());
  EXPECT_TRUE(WaitFor([&] { return client_->Put("/r/2", "b").ok(); }));
  EXPECT_TRUE(WaitFor([&] { return recorder.lines().size() >= 2; }));
  EXPECT_EQ(recorder.lines(), (std::vector<std::string>{"put /r/1=a", "put /r/2=b"}));
  EXPECT_TRUE(recorder.errors().empty());
}

TEST_F(EtcdClientTest, WatchFromCompactedRevisionReportsError) {
  ASSERT_TRUE(client_->Put("/c/1", "a").ok());
  ASSERT_TRUE(client_->Put("/c/1", "b").ok());
  auto range = client_->GetPrefix("/c/");
  ASSERT_TRUE(range.ok()) << range.status();
  SpawnOptions compact;
  compact.argv = {"etcdctl", "--endpoints=" + etcd_->endpoint(), "compact",
                  std::to_string(range->revision)};
  compact.env = {"ETCDCTL_API=3"};
  auto process = Subprocess::Spawn(compact);
  if (!process.ok()) GTEST_SKIP() << "etcdctl: " << process.status();
  auto exit = (*process)->Wait(absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(exit.ok() && exit->exited && exit->code == 0);
  Recorder recorder;
  auto watch = recorder.Watch(*client_, "/c/", 1);
  ASSERT_TRUE(WaitFor([&] { return !recorder.errors().empty(); }));
  EXPECT_TRUE(absl::IsOutOfRange(recorder.errors()[0])) << recorder.errors()[0];
}

}  // namespace
}  // namespace kvstash::cluster
