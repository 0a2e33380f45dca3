-- GET with the token of BENCH_TOKEN in X-Auth-Token (admin lists).
wrk.headers["X-Auth-Token"] = os.getenv("BENCH_TOKEN")
