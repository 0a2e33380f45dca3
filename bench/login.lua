-- POST /0.1/token with the Basic credentials of BENCH_BASIC ("user:password", base64).
wrk.method = "POST"
wrk.headers["Authorization"] = "Basic " .. os.getenv("BENCH_BASIC")
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"expiration": 3600}'
