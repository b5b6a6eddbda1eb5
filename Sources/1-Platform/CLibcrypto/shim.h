// OpenSSL's libcrypto (Debian: libssl-dev), for the SHA-256 of the face model's files. Every
// rig already loads it (libmosquitto and libssl need it), so the digest costs the binary nothing,
// where swift-crypto's own BoringSSL added 2.2 MB to the stripped binary.
#ifndef CLIBCRYPTO_SHIM_H
#define CLIBCRYPTO_SHIM_H

#include <openssl/evp.h>

#endif
