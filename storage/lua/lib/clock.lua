-- The server's clock, in seconds: one clock for every process that runs a script.
local function server_now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end

-- A number as a string that keeps its fraction (Redis turns a Lua number it is given back
-- into an integer); 14 digits: a tenth of a millisecond of an epoch time.
local function exact(x)
  return tostring(x)
end

-- Keep `key` for `seconds` more at least (never shorten what another write set).
local function keep(key, seconds)
  local ttl = redis.call('TTL', key)
  if ttl == -1 or (ttl >= 0 and ttl < seconds) then redis.call('EXPIRE', key, seconds) end
end
