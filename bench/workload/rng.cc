#include "bench/workload/rng.h"

#include <algorithm>

namespace kvstash::bench::workload {
namespace {

uint64_t SplitMix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xd1342543de82ef95ull);
  for (uint64_t& s : s_) s = SplitMix64(x);
}

uint64_t Rng::Next() {
  const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

int64_t Rng::UniformInt(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(span == 0 ? Next() : Next() % span);
}

double Rng::Normal() {
  // Box-Muller; the second value is dropped to keep the stream simple.
  const double u1 = 1.0 - Uniform();
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Rng::LogNormalMean(double mean, double sigma) {
  const double mu = std::log(mean) - sigma * sigma / 2;
  return std::exp(mu + sigma * Normal());
}

double Rng::Gamma(double shape) {
  if (shape < 1) return Gamma(shape + 1) * std::pow(Uniform() + 1e-300, 1.0 / shape);
  const double d = shape - 1.0 / 3, c = 1.0 / std::sqrt(9 * d);
  while (true) {
    double x = Normal(), v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = Uniform();
    if (std::log(u + 1e-300) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

double Rng::GammaMeanCv(double mean, double cv) {
  const double shape = 1.0 / (cv * cv);
  return Gamma(shape) * mean / shape;
}

int64_t Rng::Zipf(int64_t n, double s) {
  double total = 0;
  for (int64_t i = 1; i <= n; ++i) total += std::pow(static_cast<double>(i), -s);
  double u = Uniform() * total;
  for (int64_t i = 1; i <= n; ++i) {
    u -= std::pow(static_cast<double>(i), -s);
    if (u <= 0) return i - 1;
  }
  return n - 1;
}

}  // namespace kvstash::bench::workload
