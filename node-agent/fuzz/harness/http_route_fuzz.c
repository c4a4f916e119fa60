/* The kernel's HTTP/1.x request-line parser (src/capture/connections/http_route.h) as a native function, so the
 * fuzz target runs exactly the code the BPF program runs. Same prelude as tests/common/native.rs. */
typedef unsigned long long __u64;
typedef unsigned int __u32;
typedef unsigned short __u16;
typedef unsigned char __u8;
#include <string.h>
#include "http_route.h"

/* Parses the first bytes of `data` as the kernel does: the route id (ROUTE_NONE if not a
 * request line), method, truncated flag and the NUL-padded path (HTTP_PATH_MAX bytes). */
unsigned long long wg_fuzz_http_route_parse(const unsigned char *data, unsigned long len, unsigned char *method,
					    unsigned char *truncated, char *path)
{
	struct http_parse p;
	memset(&p, 0x5a, sizeof p); /* stale bytes from an earlier parse, as in the per-CPU map */
	p.n = len < HTTP_PEEK ? (__u32)len : HTTP_PEEK;
	memcpy(p.raw, data, p.n);
	unsigned long long id = http_route_parse(&p);
	*method = p.r.method;
	*truncated = p.r.truncated;
	memcpy(path, p.r.path, HTTP_PATH_MAX);
	return id;
}

/* Request starts `a` then `b` on one CPU (http_remember after a's parse): 1 when b is answered
 * from the route remembered of a, with the id a parse of b names; 0 when answered with another
 * id; -1 when b is parsed. */
int wg_fuzz_http_route_remembered(const unsigned char *a, unsigned long alen, const unsigned char *b,
				  unsigned long blen)
{
	static struct http_parse p, q;
	memset(&p, 0x5a, sizeof p);
	p.last_len = 0; /* as the per-CPU map starts: nothing remembered */
	p.n = alen < HTTP_PEEK ? (__u32)alen : HTTP_PEEK;
	memcpy(p.raw, a, p.n);
	unsigned long long id = http_route_parse(&p);
	if (id != ROUTE_NONE)
		http_remember(&p, id, 7);
	p.n = blen < HTTP_PEEK ? (__u32)blen : HTTP_PEEK;
	memcpy(p.raw, b, p.n);
	if (p.last_gen != 7 || !http_repeats_last(&p))
		return -1;
	memset(&q, 0x5a, sizeof q);
	q.n = p.n;
	memcpy(q.raw, b, q.n);
	return http_route_parse(&q) == p.last_id;
}
