-- POST /0.1/oidc/introspect (RFC 7662) of BENCH_TOKEN, the client authenticated with BENCH_BASIC.
wrk.method = "POST"
wrk.headers["Authorization"] = "Basic " .. os.getenv("BENCH_BASIC")
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = "token=" .. os.getenv("BENCH_TOKEN")
