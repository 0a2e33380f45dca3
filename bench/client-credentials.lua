-- POST /token with grant_type=client_credentials (RFC 6749 §4.4), the client authenticated with BENCH_BASIC.
wrk.method = "POST"
wrk.headers["Authorization"] = "Basic " .. os.getenv("BENCH_BASIC")
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.body = "grant_type=client_credentials"
