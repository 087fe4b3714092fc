#include "common/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace kvstash {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

absl::Status Bad(absl::string_view setting, const std::string& path, absl::string_view why) {
  ERR_clear_error();
  return absl::InvalidArgumentError(absl::StrCat(setting, ": ", path, ": ", why));
}

absl::StatusOr<std::string> ReadWhole(absl::string_view setting, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Bad(setting, path, absl::StrCat("cannot read (", std::strerror(errno), ")"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::unique_ptr<BIO, BioFree> MemoryBio(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// The first certificate of `pem`, or null.
std::unique_ptr<X509, X509Free> FirstCertificate(const std::string& pem) {
  auto bio = MemoryBio(pem);
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

absl::StatusOr<std::string> ReadCertificates(absl::string_view setting, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadWhole(setting, path);
  if (!pem.ok()) return pem.status();
  if (FirstCertificate(*pem) == nullptr) {
    return Bad(setting, path, "holds no PEM certificate (-----BEGIN CERTIFICATE-----)");
  }
  ERR_clear_error();
  return pem;
}

absl::StatusOr<std::string> ReadMatchingKey(absl::string_view cert_setting,
                                            const std::string& cert_path,
                                            absl::string_view key_setting,
                                            const std::string& key_path) {
  absl::StatusOr<std::string> cert_pem = ReadCertificates(cert_setting, cert_path);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = ReadWhole(key_setting, key_path);
  if (!key_pem.ok()) return key_pem.status();
  auto bio = MemoryBio(*key_pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return Bad(key_setting, key_path, "holds no unencrypted PEM private key");
  }
  std::unique_ptr<X509, X509Free> cert = FirstCertificate(*cert_pem);
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return Bad(key_setting, key_path,
               absl::StrCat("is not the key of the certificate in ", cert_path));
  }
  return key_pem;
}

}  // namespace kvstash
