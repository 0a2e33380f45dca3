-- HEAD /0.1/token/<a new random UUID v4> for every request: a flood of unknown tokens.
wrk.method = "HEAD"
local hex = "0123456789abcdef"
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  local t = {}
  for i = 1, 32 do
    local r = math.random(1, 16)
    t[i] = hex:sub(r, r)
  end
  local s = table.concat(t)
  local uuid = s:sub(1, 8) .. "-" .. s:sub(9, 12) .. "-4" .. s:sub(14, 16) .. "-8" .. s:sub(18, 20) .. "-" .. s:sub(21, 32)
  return wrk.format(nil, "/0.1/token/" .. uuid .. "?scope=calld.users.me.calls.read")
end
