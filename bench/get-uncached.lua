-- GET with the token of BENCH_TOKEN, each request a different page (`offset` and `limit` vary, at
-- nearly the same cost): no answer can come from the list cache, this is the database's cost.
wrk.headers["X-Auth-Token"] = os.getenv("BENCH_TOKEN")
local n = 0
request = function()
  local path = wrk.path .. "&offset=" .. (n % 500) .. "&limit=" .. (10 + math.floor(n / 500) % 20)
  n = n + 1
  return wrk.format(nil, path)
end
