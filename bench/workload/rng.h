// A seeded random source whose streams are the same on every platform and library
// (std::*_distribution are implementation-defined, so traces would differ between
// standard libraries): xoshiro256** seeded through splitmix64, with the few
// distributions the trace generators need.
//
// Thread-safety: none; one Rng per generator.
#pragma once

#include <cmath>
#include <cstdint>

namespace kvstash::bench::workload {

class Rng {
 public:
  // `stream` separates independent sequences of one seed (e.g. one per session).
  explicit Rng(uint64_t seed, uint64_t stream = 0);

  uint64_t Next();
  // Uniform in [0, 1).
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [lo, hi]. REQUIRES: lo <= hi.
  int64_t UniformInt(int64_t lo, int64_t hi);
  double Exponential(double mean) { return -mean * std::log1p(-Uniform()); }
  double Normal();
  // Log-normal with the given mean and sigma of the underlying normal.
  double LogNormalMean(double mean, double sigma);
  // Gamma with the given mean and coefficient of variation (stddev / mean).
  double GammaMeanCv(double mean, double cv);
  bool Bernoulli(double p) { return Uniform() < p; }
  // Zipf over [0, n) with exponent s, by inversion over the cumulative weights.
  int64_t Zipf(int64_t n, double s);

 private:
  double Gamma(double shape);  // scale 1 (Marsaglia and Tsang)
  uint64_t s_[4];
};

}  // namespace kvstash::bench::workload
