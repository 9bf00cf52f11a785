// SPDX-License-Identifier: MIT
/*
 * tls.c - the OpenSSL context of -Z: built from settings.tls, swapped
 * whole on reload (see tls.h).
 *
 * The options are memcached 1.6's: TLS 1.2 or 1.3 at least
 * (ssl_min_version), client certificates by ssl_verify_mode against
 * ssl_ca_cert, the session cache only with ssl_session_cache, no
 * renegotiation. anchorkv adds read-ahead (one read() per batch of
 * records, not two per record), partial writes (a large value goes out
 * record by record, each written straight from the item) and treats a
 * peer that closes without close_notify as an end of input, as a plain
 * connection's EOF.
 */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "compiler.h"
#include "counters.h"
#include "settings.h"

/* memcached's session id context: a resumed session must come from here */
#define TLS_SESSION_ID_CONTEXT	"anchorkv"

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *tls_ctx;		/* under tls_lock */
static int64_t tls_refreshed;		/* unix time; atomics */

bool tls_reason(char *out, size_t room)
{
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, out, room);
	else
		snprintf(out, room, "%s", "unknown error");
	ERR_clear_error();
	return e != 0;
}

/* A new session was negotiated (only with ssl_session_cache, as memcached). */
static int on_new_session(SSL *ssl, SSL_SESSION *sess)
{
	(void)ssl;
	(void)sess;
	stats_inc(ssl_new_sessions);
	return 0;	/* OpenSSL keeps its reference */
}

/*
 * Loads the files into @ctx, in memcached's order and words.
 * Return: 0, or -1 with @err set.
 */
static int load_files(SSL_CTX *ctx, const struct tls_settings *t, char *err,
		      size_t errlen)
{
	const char *key = t->key[0] ? t->key : t->chain_cert;
	int type = t->keyformat == 2 ? SSL_FILETYPE_ASN1 : SSL_FILETYPE_PEM;
	char why[256];

	if (!SSL_CTX_use_certificate_chain_file(ctx, t->chain_cert)) {
		tls_reason(why, sizeof(why));
		snprintf(err, errlen, "Error loading the certificate chain: "
			 "%s : %s", t->chain_cert, why);
		return -1;
	}
	if (!SSL_CTX_use_PrivateKey_file(ctx, key, type)) {
		tls_reason(why, sizeof(why));
		snprintf(err, errlen, "Error loading the key: %s : %s", key,
			 why);
		return -1;
	}
	if (!SSL_CTX_check_private_key(ctx)) {
		tls_reason(why, sizeof(why));
		snprintf(err, errlen, "Error validating the certificate: %s",
			 why);
		return -1;
	}
	if (t->ca_cert[0]) {
		STACK_OF(X509_NAME) *names;

		if (!SSL_CTX_load_verify_locations(ctx, t->ca_cert, NULL)) {
			tls_reason(why, sizeof(why));
			snprintf(err, errlen, "Error loading the CA "
				 "certificate: %s : %s", t->ca_cert, why);
			return -1;
		}
		/* the names a client is told to pick its certificate by */
		names = SSL_load_client_CA_file(t->ca_cert);
		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
	}
	return 0;
}

static int verify_flags(unsigned int mode)
{
	switch (mode) {
	case 1:
		return SSL_VERIFY_PEER;
	case 2:
		return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	case 3:
		return SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT |
		       SSL_VERIFY_CLIENT_ONCE;
	default:
		return SSL_VERIFY_NONE;
	}
}

/* Return: a context from settings.tls, or NULL with @err set. */
static SSL_CTX *ctx_build(char *err, size_t errlen)
{
	const struct tls_settings *t = &settings.tls;
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char why[256];

	if (!ctx) {
		tls_reason(why, sizeof(why));
		snprintf(err, errlen, "cannot create the TLS context: %s", why);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, t->min_version == 3 ?
				      TLS1_3_VERSION : TLS1_2_VERSION);
	if (load_files(ctx, t, err, errlen))
		goto fail;
	SSL_CTX_set_verify(ctx, verify_flags(t->verify_mode), NULL);
	if (t->ciphers[0] && !SSL_CTX_set_cipher_list(ctx, t->ciphers)) {
		ERR_clear_error();
		snprintf(err, errlen, "Error setting the provided cipher(s): "
			 "%s", t->ciphers);
		goto fail;
	}
	if (t->session_cache) {
		SSL_CTX_sess_set_new_cb(ctx, on_new_session);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
		SSL_CTX_set_session_id_context(ctx,
			(const unsigned char *)TLS_SESSION_ID_CONTEXT,
			sizeof(TLS_SESSION_ID_CONTEXT) - 1);
	} else {
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	}
	if (t->kernel_tls) {
#ifdef SSL_OP_ENABLE_KTLS
		SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS);
#else
		snprintf(err, errlen, "Kernel TLS offload is not available");
		goto fail;
#endif
	}
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
			    SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS |
			 SSL_MODE_ENABLE_PARTIAL_WRITE |
			 SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_read_ahead(ctx, 1);
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

int tls_init(char *err, size_t errlen)
{
	return tls_reload(err, errlen);
}

int tls_reload(char *err, size_t errlen)
{
	SSL_CTX *ctx, *old;

	if (!settings.tls.enabled) {
		snprintf(err, errlen, "%s", "Error TLS not enabled");
		return -1;
	}
	ctx = ctx_build(err, errlen);
	if (!ctx)
		return -1;
	pthread_mutex_lock(&tls_lock);
	old = tls_ctx;
	tls_ctx = ctx;
	pthread_mutex_unlock(&tls_lock);
	/* the connections made with it hold their own references */
	SSL_CTX_free(old);
	__atomic_store_n(&tls_refreshed, (int64_t)time(NULL),
			 __ATOMIC_RELAXED);
	return 0;
}

struct ssl_st *tls_ssl_new(int fd)
{
	SSL *ssl = NULL;

	pthread_mutex_lock(&tls_lock);
	if (tls_ctx)
		ssl = SSL_new(tls_ctx);
	pthread_mutex_unlock(&tls_lock);
	if (!ssl) {
		ERR_clear_error();
		return NULL;
	}
	if (!SSL_set_fd(ssl, fd)) {
		ERR_clear_error();
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

int64_t tls_last_refresh(void)
{
	return __atomic_load_n(&tls_refreshed, __ATOMIC_RELAXED);
}

const char *tls_version_name(unsigned int min_version)
{
	return min_version == 3 ? "tlsv1.3" : "tlsv1.2";
}

void tls_exit(void)
{
	pthread_mutex_lock(&tls_lock);
	SSL_CTX_free(tls_ctx);
	tls_ctx = NULL;
	pthread_mutex_unlock(&tls_lock);
}
