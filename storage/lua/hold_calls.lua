-- A process saw a 429 or a Retry-After for a provider key: every process holds its calls of the
-- key for A.hold seconds (a longer hold already set stays); A.rejected 1 counts a 429.
local until_then = server_now() + tonumber(A.hold)
local held = tonumber(redis.call('HGET', K.state, LIMIT.HOLD_UNTIL)) or 0
if until_then > held then redis.call('HSET', K.state, LIMIT.HOLD_UNTIL, exact(until_then)) end
if tonumber(A.rejected) == 1 then redis.call('HINCRBY', K.state, LIMIT.RATE_LIMITED, 1) end
keep(K.state, tonumber(A.keep_seconds))
return 1
