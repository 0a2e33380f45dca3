-- PUT /0.1/users/{u} with the JSON body of BENCH_BODY, as the administrator of BENCH_TOKEN (an admin write).
wrk.method = "PUT"
wrk.headers["X-Auth-Token"] = os.getenv("BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BENCH_BODY")
