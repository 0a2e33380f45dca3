-- PUT /0.1/users/{u} over the users of BENCH_USERS ("uuid=username,…"), one after the other, as the
-- administrator of BENCH_TOKEN: admin writes that share no row (bench/audit.ts).
local users = {}
for uuid, name in string.gmatch(os.getenv("BENCH_USERS"), "([^=,]+)=([^,]+)") do
  users[#users + 1] = { uuid = uuid, name = name }
end
local i = 0
wrk.method = "PUT"
wrk.headers["X-Auth-Token"] = os.getenv("BENCH_TOKEN")
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i + 1
  local u = users[(i % #users) + 1]
  local body = '{"username":"' .. u.name .. '","firstname":"Bench","purpose":"internal"}'
  return wrk.format(nil, "/0.1/users/" .. u.uuid, nil, body)
end
