-- GCRA over a provider key's requests and tokens per minute, spaced evenly with no burst: a
-- request may go once the theoretical arrival time of each rate (requests_at, tokens_at) has
-- come and no 429's hold (hold_until) lasts; going, it moves them on by its cost (60 s over the
-- rate per request; per token, times its tokens). Spaced so, no window of a minute holds more
-- than the rate (of tokens, but for the last request's own). A rate given as "" is not
-- limited. Returns {wait, now} as strings of seconds: a wait of 0 means charged, go.
local now = server_now()
local held = redis.call('HMGET', K.state, LIMIT.HOLD_UNTIL, LIMIT.REQUESTS_AT, LIMIT.TOKENS_AT,
  LIMIT.MINUTE)
local wait = math.max(0, (tonumber(held[1]) or 0) - now)
local rpm, tpm = tonumber(A.requests_per_minute), tonumber(A.tokens_per_minute)
local tokens = tonumber(A.tokens)
local requests_at = math.max(tonumber(held[2]) or 0, now)
local tokens_at = math.max(tonumber(held[3]) or 0, now)
if rpm then wait = math.max(wait, requests_at - now) end
if tpm then wait = math.max(wait, tokens_at - now) end
if wait > 0 then return {exact(wait), exact(now)} end
if rpm then redis.call('HSET', K.state, LIMIT.REQUESTS_AT, exact(requests_at + 60 / rpm)) end
if tpm then redis.call('HSET', K.state, LIMIT.TOKENS_AT, exact(tokens_at + tokens * 60 / tpm)) end
local minute = tostring(math.floor(now / 60))
if held[4] ~= minute then
  redis.call('HSET', K.state, LIMIT.MINUTE, minute, LIMIT.REQUESTS, 0, LIMIT.TOKENS, 0)
end
redis.call('HINCRBY', K.state, LIMIT.REQUESTS, 1)
redis.call('HINCRBY', K.state, LIMIT.TOKENS, tokens)
keep(K.state, tonumber(A.keep_seconds))
return {exact(0), exact(now)}
