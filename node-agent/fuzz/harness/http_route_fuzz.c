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
