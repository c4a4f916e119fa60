/* Plain-text HTTP/1.x request line -> bounded route (method + normalised path) and its id.
 * Pure code over a byte buffer, compiled into the BPF program and natively into the agent's
 * tests (tests/http_route.rs), so what the kernel computes is what the tests check.
 * Mirrored in http_route.rs (names of the methods, layout of struct http_route). */
#ifndef WATTGRAPH_HTTP_ROUTE_H
#define WATTGRAPH_HTTP_ROUTE_H

#define HTTP_PEEK 128     /* request bytes looked at (power of two: indexes are masked) */
#define HTTP_PATH_MAX 64  /* path bytes kept, NUL included (power of two) */
#define HTTP_LAST_MAX 64  /* request bytes a remembered route is matched on (multiple of 8) */
/* Route ids: FNV-1a of method and path; these two values are never a hash. */
#define ROUTE_NONE 0ULL   /* not an HTTP/1.x request (or not parsed) */
#define ROUTE_OTHER 1ULL  /* the route table was full */

enum http_method { HTTP_NONE = 0, HTTP_GET = 1, HTTP_POST = 2, HTTP_PUT = 3, HTTP_DELETE = 4,
		   HTTP_HEAD = 5, HTTP_PATCH = 6, HTTP_OPTIONS = 7, HTTP_CONNECT = 8, HTTP_TRACE = 9 };

struct http_route {
	char path[HTTP_PATH_MAX];
	__u8 method;      /* enum http_method */
	__u8 truncated;   /* path cut at HTTP_PATH_MAX - 1, or the line did not end in the bytes read */
	__u8 _pad[6];
};

/* Working state of one parse (kept in a per-CPU map by the BPF program). */
struct http_parse {
	/* Only the first HTTP_PEEK bytes are parsed; twice that so that a read of up to HTTP_PEEK
	 * bytes at any offset below HTTP_PEEK fits (the verifier bounds offset and size apart). */
	char raw[2 * HTTP_PEEK] __attribute__((aligned(8))); /* aligned: compared a word at a time */
	struct http_route r;
	__u64 hash;       /* FNV-1a of the path bytes written so far (the route id being built) */
	__u64 seg_hash;   /* hash as the current segment began: an "{id}" rewrite continues from it */
	/* The last route named here (http_remember): a request starting with the same bytes through
	 * the one that ended its path has the same route, found without a parse (http_repeats_last). */
	char last[HTTP_LAST_MAX] __attribute__((aligned(8)));
	__u64 last_id;
	__u32 last_len;   /* bytes of last that matter; 0: none remembered */
	__u32 last_gen;   /* the route table's generation when it was named (the caller's) */
	__u32 end;        /* index in raw of the byte that ended the path (when ended) */
	__u32 n;          /* valid bytes in raw */
	__u32 off;        /* index in raw of the first path byte */
	__u32 j;          /* path bytes written */
	__u32 seg;        /* index in path of the current segment's first byte */
	__u8 digits;      /* the current segment is decimal digits only (so far) */
	__u8 hex;         /* ... hex digits and '-' only */
	__u8 has_digit;
	__u8 ended;       /* the path ended inside the bytes read */
	__u8 bad;         /* a byte no request line has there */
	__u8 rewound;     /* a segment became "{id}": bytes past j may be left */
	__u8 _pad[2];
};

#ifdef __bpf__
#define HTTP_LOOP(n, cb, ctx) bpf_loop((n), (cb), (ctx), 0)
#else
#define HTTP_LOOP(n, cb, ctx) \
	do { for (__u32 _i = 0; _i < (n); _i++) if ((cb)(_i, (ctx))) break; } while (0)
#endif

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* v & mask, the mask kept: after a bounds check the compiler would drop it and index with an
 * unmasked copy, which the verifier rejects. */
static __always_inline __u32 http_idx(__u32 v, __u32 mask)
{
#ifdef __bpf__
	asm volatile("" : "+r"(v));
#endif
	return v & mask;
}
#define PATH_AT(p, x) ((p)->r.path[http_idx((x), HTTP_PATH_MAX - 1)])

static __always_inline int http_lit(const char *b, __u32 n, const char *lit, __u32 len)
{
	if (n < len + 1)
		return 0;
	for (__u32 i = 0; i < len; i++)
		if (b[i] != lit[i])
			return 0;
	return 1;
}

/* Method and the offset of the request target, or HTTP_NONE. */
static __always_inline __u8 http_method_of(const char *b, __u32 n, __u32 *off)
{
	switch (b[0]) {
	case 'G':
		if (http_lit(b, n, "GET ", 4)) { *off = 4; return HTTP_GET; }
		break;
	case 'P':
		if (http_lit(b, n, "POST ", 5)) { *off = 5; return HTTP_POST; }
		if (http_lit(b, n, "PUT ", 4)) { *off = 4; return HTTP_PUT; }
		if (http_lit(b, n, "PATCH ", 6)) { *off = 6; return HTTP_PATCH; }
		break;
	case 'D':
		if (http_lit(b, n, "DELETE ", 7)) { *off = 7; return HTTP_DELETE; }
		break;
	case 'H':
		if (http_lit(b, n, "HEAD ", 5)) { *off = 5; return HTTP_HEAD; }
		break;
	case 'O':
		if (http_lit(b, n, "OPTIONS ", 8)) { *off = 8; return HTTP_OPTIONS; }
		break;
	case 'C':
		if (http_lit(b, n, "CONNECT ", 8)) { *off = 8; return HTTP_CONNECT; }
		break;
	case 'T':
		if (http_lit(b, n, "TRACE ", 6)) { *off = 6; return HTTP_TRACE; }
		break;
	}
	return HTTP_NONE;
}

#define HTTP_FNV_BASIS 0xcbf29ce484222325ULL
#define HTTP_FNV_PRIME 0x100000001b3ULL

static __always_inline void http_hash_byte(struct http_parse *p, char c)
{
	p->hash = (p->hash ^ (__u8)c) * HTTP_FNV_PRIME;
}

/* Ends the current segment: an id-like one becomes "{id}", its hash redone from the segment's
 * start (FNV-1a is sequential), so the id is the hash of the path as finally written. */
static __always_inline void http_close_segment(struct http_parse *p)
{
	__u32 len = p->j - p->seg;
	if (!len || p->seg >= HTTP_PATH_MAX)
		return;
	if (!(p->digits || (p->hex && p->has_digit && len >= 8)))
		return;
	p->rewound = 1;
	p->hash = p->seg_hash;
	if (p->seg + 4 > HTTP_PATH_MAX - 1) {
		p->j = p->seg; /* no room for the placeholder */
		p->r.truncated = 1;
		return;
	}
	PATH_AT(p, p->seg) = '{';
	PATH_AT(p, p->seg + 1) = 'i';
	PATH_AT(p, p->seg + 2) = 'd';
	PATH_AT(p, p->seg + 3) = '}';
	http_hash_byte(p, '{');
	http_hash_byte(p, 'i');
	http_hash_byte(p, 'd');
	http_hash_byte(p, '}');
	p->j = p->seg + 4;
}

/* bpf_loop wants its context on the stack: it holds the pointer to the per-CPU state. */
struct http_loop_ctx {
	struct http_parse *p;
};

/* One byte of the request target. Returns 1 to stop. */
static long http_path_step(__u32 k, void *ctx)
{
	struct http_parse *p = ((struct http_loop_ctx *)ctx)->p;
	__u32 i = p->off + k;
	if (i >= p->n || i >= HTTP_PEEK)
		return 1;
	char c = p->raw[http_idx(i, HTTP_PEEK - 1)];
	int end = c == ' ' || c == '?' || c == '#' || c == '\r' || c == '\n';
	if (end || c == '/') {
		http_close_segment(p);
		if (end) {
			p->ended = 1;
			p->end = i;
			return 1;
		}
	} else if (c < 0x21 || c > 0x7e) {
		p->bad = 1; /* binary or TLS, not a request line */
		return 1;
	}
	if (p->j >= HTTP_PATH_MAX - 1) {
		p->r.truncated = 1;
		return 1;
	}
	PATH_AT(p, p->j) = c;
	p->j++;
	http_hash_byte(p, c);
	if (c == '/') {
		p->seg = p->j;
		p->seg_hash = p->hash;
		p->digits = 1;
		p->hex = 1;
		p->has_digit = 0;
		return 0;
	}
	int d = c >= '0' && c <= '9';
	int h = d || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '-';
	p->digits &= d;
	p->hex &= h;
	p->has_digit |= d;
	return 0;
}

/* Clears path byte j + k (bytes past the path; only a rewind to "{id}" left any). Stops at the
 * first NUL: everything after it was never written in this parse. */
static long http_clear_step(__u32 k, void *ctx)
{
	struct http_parse *p = ((struct http_loop_ctx *)ctx)->p;
	__u32 i = p->j + k;
	if (i >= HTTP_PATH_MAX || !PATH_AT(p, i))
		return 1;
	PATH_AT(p, i) = 0;
	return 0;
}

/* Parses p->raw[0..p->n): fills p->r and returns the route id, or ROUTE_NONE. */
static __always_inline __u64 http_route_parse(struct http_parse *p)
{
	__u32 off = 0;
	/* Constant size: eight stores, no loop; the tail stays NUL (the map value is the name). */
	__builtin_memset(p->r.path, 0, HTTP_PATH_MAX);
	p->r.truncated = 0;
	p->r.method = http_method_of(p->raw, p->n, &off);
	if (p->r.method == HTTP_NONE)
		return ROUTE_NONE;
	p->off = off;
	p->j = 0;
	p->seg = 0;
	p->digits = 1;
	p->hex = 1;
	p->has_digit = 0;
	p->ended = 0;
	p->bad = 0;
	p->rewound = 0;
	/* The route id: FNV-1a over the path from a basis that holds the method, built as the path
	 * is written (a second loop over the path cost ~8 ns per byte in callbacks). */
	p->hash = HTTP_FNV_BASIS ^ p->r.method;
	p->seg_hash = p->hash;
	struct http_loop_ctx c = { .p = p };
	HTTP_LOOP(HTTP_PEEK, http_path_step, &c);
	if (p->bad)
		return ROUTE_NONE;
	if (!p->ended) {
		http_close_segment(p); /* the bytes ran out inside the path */
		p->r.truncated = 1;
	}
	if (!p->j)
		return ROUTE_NONE;
	/* A rewind to "{id}" leaves bytes past j: clear them (at most the segment it replaced). */
	if (p->rewound)
		HTTP_LOOP(HTTP_PATH_MAX - p->j, http_clear_step, &c);
	__u64 h = p->hash ^ p->r.truncated;
	return h <= ROUTE_OTHER ? h + 2 : h;
}

/* 1 when raw starts with the bytes of the route remembered last, through the byte that ended its
 * path: the parse reads nothing past it, so it would name the same route (last_id). Word by
 * word: a byte loop costs as much as the parse it saves. */
static __always_inline int http_repeats_last(const struct http_parse *p)
{
	__u32 len = p->last_len;
	if (!len || len > HTTP_LAST_MAX || p->n < len)
		return 0;
	__u64 diff = 0;
	for (__u32 at = 0; at < HTTP_LAST_MAX; at += 8) {
		__u64 a, b, mask;
		__builtin_memcpy(&a, __builtin_assume_aligned(p->raw + at, 8), 8);
		__builtin_memcpy(&b, __builtin_assume_aligned(p->last + at, 8), 8);
		if (len >= at + 8)
			mask = ~0ULL;
		else if (len <= at)
			mask = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		else
			mask = (1ULL << (8 * (len - at))) - 1;
#else
		else
			mask = ~0ULL << (8 * (8 - (len - at)));
#endif
		diff |= (a ^ b) & mask;
	}
	return diff == 0;
}

/* After a parse that named `id` (in the route table of generation `gen`): remembers it, when the
 * bytes that decide it fit in last. */
static __always_inline void http_remember(struct http_parse *p, __u64 id, __u32 gen)
{
	p->last_len = 0;
	if (!p->ended || p->end >= HTTP_LAST_MAX)
		return;
	__builtin_memcpy(p->last, p->raw, HTTP_LAST_MAX);
	p->last_id = id;
	p->last_gen = gen;
	p->last_len = p->end + 1;
}

#endif
