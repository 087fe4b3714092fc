#!/bin/sh
# Writes the certificates TLS tests use into DIR (made fresh each run, never checked in):
#   ca.crt/ca.key              the trusted CA
#   server.crt/server.key      localhost + 127.0.0.1 (SAN), signed by ca
#   client.crt/client.key      a client identity (clientAuth), signed by ca
#   peer.crt/peer.key          localhost + 127.0.0.1, serverAuth and clientAuth, signed by ca
#                              (a cluster member under mutual TLS, which also probes peers)
#   other_ca.crt               an unrelated CA
#   other_server.crt/.key      localhost + 127.0.0.1, signed by other_ca (a rotation target)
#   expired.crt/expired.key    localhost + 127.0.0.1, signed by ca, valid only in 2020
# Usage: tls_certs.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
cd "$dir"
newkey="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -noenc"

cat > ext.cnf <<'CNF'
[server]
subjectAltName = DNS:localhost, IP:127.0.0.1
extendedKeyUsage = serverAuth
[client]
extendedKeyUsage = clientAuth
[peer]
subjectAltName = DNS:localhost, IP:127.0.0.1
extendedKeyUsage = serverAuth, clientAuth
CNF

ca() {  # ca NAME CN
  openssl req -x509 $newkey -keyout "$1.key" -out "$1.crt" -days 2 -subj "/CN=$2" 2>/dev/null
}
leaf() {  # leaf NAME CN CA EXTENSIONS
  openssl req -new $newkey -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$3.crt" -CAkey "$3.key" -CAcreateserial -days 2 \
    -extfile ext.cnf -extensions "$4" -out "$1.crt" 2>/dev/null
}

ca ca "kvstash test CA"
ca other_ca "unrelated test CA"
leaf server localhost ca server
leaf client "test client" ca client
leaf peer localhost ca peer
leaf other_server localhost other_ca server

# `openssl x509 -days` cannot go back in time; `openssl ca` takes explicit dates.
mkdir -p ca_db
: > ca_db/index.txt
echo 1000 > ca_db/serial
cat > ca.cnf <<'CNF'
[ca]
default_ca = test_ca
[test_ca]
database = ca_db/index.txt
serial = ca_db/serial
new_certs_dir = ca_db
certificate = ca.crt
private_key = ca.key
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
CNF
openssl req -new $newkey -keyout expired.key -out expired.csr -subj "/CN=localhost" 2>/dev/null
openssl ca -batch -config ca.cnf -in expired.csr -out expired.crt -notext \
  -startdate 20200101000000Z -enddate 20200102000000Z -extfile ext.cnf -extensions server \
  2>/dev/null
chmod 600 ./*.key
